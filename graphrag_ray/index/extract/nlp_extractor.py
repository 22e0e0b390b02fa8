"""Offline extraction without an LLM: proper-noun phrases as entities, sentence co-occurrence as
relationships, the sentences themselves as descriptions.

Why hand-written: spaCy, NLTK and TextBlob all need models or corpora downloaded at run time,
which this product must never do. Capitalisation is a strong signal for names in English prose
and transcripts; the filters below remove sentence-initial common words.
"""

from __future__ import annotations

import re
from itertools import combinations

from graphrag_ray.index.extract.tuples import ParsedRecords, normalize_name
from graphrag_ray.index.extract.uncased_scripts import UncasedChunk, is_uncased
from graphrag_ray.index.elements import EITHER, GUESSED_TYPE
from graphrag_ray.sentences import split_at


def _case_ranges() -> tuple[str, str]:
    """The upper- and lower-case letters of the BMP as regex class contents (ranges), in one
    pass: Python's `re` has no \\p{Lu}, and names are written in every Latin script
    (André, Łódź, Ærø), not only A-Z. (The `regex` module's classes read the same names,
    more slowly: docs/decisions.md.)"""
    ranges: dict[bool, list[list[int]]] = {True: [], False: []}
    for code in range(0x10000):
        char = chr(code)
        if char.isalpha() and char.isupper() != char.islower():
            runs = ranges[char.isupper()]
            if runs and runs[-1][1] == code - 1:
                runs[-1][1] = code
            else:
                runs.append([code, code])

    def contents(runs: list[list[int]]) -> str:
        return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                       for a, b in runs)
    return contents(ranges[True]), contents(ranges[False])


_UPPER_RANGES, _LOWER_RANGES = _case_ranges()
_UPPER, _LOWER = f"[{_UPPER_RANGES}]", f"[{_LOWER_RANGES}]"
_LETTER = r"[^\W\d_]"
_SPEAKER_LABEL = re.compile(rf"(^|\n)[ \t]*({_UPPER}[{_UPPER_RANGES}'’.\- ]{{1,40}}):", re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?;:؟])[\"'”’)\]]*\s+|(?<=[。！？；])|\n\s*\n")
# A capitalised word; letters joined by single hyphens or apostrophes stay one word
# (Jean-Luc, O'Brien), a double dash (an em-dash typed as "--") ends it.
_WORD = (rf"{_UPPER}{_LOWER}{_LETTER}*(?:['’\-]{_LETTER}+)*|{_UPPER}{_LOWER}"
         rf"|{_UPPER}{{2,5}}\b")
_MAX_NAME_WORDS = 5
# Runs of capitalised words, allowing short joiners inside: "Bank of England", "Tiny Tim",
# "Fête des Lumières", "Revue d'Histoire des Sciences", "Banco de la Nación".
_JOINER = r"(?:of|the|de|du|da|des|del|della|di|dos|das|der|den|van|von|de la)"
_PHRASE = re.compile(rf"\b(?:{_WORD})(?:(?:\s+{_JOINER}\s+|\s+[dl]['’]|\s+)(?:{_WORD}))*")
# A possessive ends a name ("MIT's Ben Bloomberg" is two), except before a word that makes
# a place of it: Wolf's Crag, King's Cross, Land's End, St John's Wood stay whole.
_PLACE_AFTER_POSSESSIVE = ("Crag|Cross|End|Wood|Hill|Head|Bay|Point|Inn|Castle|Tower|Abbey|"
                           "Chapel|Church|Cathedral|College|Court|Gate|Green|Field|Park|Lane|"
                           "Road|Street|Square|Island|Well|Mill|Bridge|Hall|Vineyard|Harbour|"
                           "Harbor|Landing|Rock|Valley|Creek|Lake")
_POSSESSIVE = re.compile(rf"['’]s\b(?!\s+(?:{_PLACE_AFTER_POSSESSIVE})\b)")
_HONORIFICS = {"MR", "MRS", "MS", "MISS", "DR", "SIR", "LADY", "LORD", "SAINT", "ST", "MASTER",
               "MESSRS",
               "UNCLE", "AUNT", "PROFESSOR", "PROF", "CAPTAIN", "KING", "QUEEN"}
_ORG_WORDS = {"INC", "CORP", "CORPORATION", "COMPANY", "CO", "LTD", "LLC", "UNIVERSITY",
              "INCORPORATED", "LIMITED", "INDUSTRIES", "HOLDINGS", "ENTERPRISES",
              "INSTITUTE", "BANK", "GROUP", "FOUNDATION", "SOCIETY", "ASSOCIATION", "COUNCIL",
              "COMMITTEE", "AGENCY", "DEPARTMENT", "MINISTRY", "LABS", "SCHOOL", "COLLEGE", "GUILD",
              "PRESS", "UNION", "PARTY", "CHURCH", "MUSEUM", "LIBRARY", "OBSERVATORY",
              # in other languages, where the kind word comes first (Université de Lyon)
              "UNIVERSITÉ", "UNIVERSIDAD", "UNIVERSIDADE", "UNIVERSITÀ", "UNIVERSITÄT",
              "INSTITUT", "INSTITUTO", "SOCIÉTÉ", "COMPAGNIE", "COMPAÑÍA", "BANQUE", "BANCO",
              "AGENCE", "AGENCIA", "FONDATION", "FUNDACIÓN", "CONSEIL", "COMITÉ", "MINISTÈRE",
              "MINISTERIO", "SYNDICAT", "ENTREPRISE", "GROUPE", "MUSÉE", "MUSEO",
              "BIBLIOTHÈQUE", "BIBLIOTECA", "OBSERVATOIRE", "PRÉFECTURE", "MAIRIE",
              "MÉTROPOLE", "ASSOCIATION", "ASOCIACIÓN", "GESELLSCHAFT", "VEREIN"}
_PLACE_WORDS = {"STREET", "CITY", "RIVER", "MOUNT", "LAKE", "COUNTY", "ISLAND", "SQUARE",
                "ROAD", "LANE", "HALL", "EXCHANGE", "MARKET", "VALLEY", "BRIDGE", "HOUSE",
                "TOWN", "PARK", "COUNTRY", "STATE", "STATES", "KINGDOM", "EMPIRE", "CRAG",
                "INN", "CASTLE", "TOWER", "ABBEY", "CHAPEL", "CATHEDRAL", "HARBOUR", "HARBOR",
                "BAY", "WOOD", "HILL", "CREEK", "CROSS", "RUE", "AVENUE", "BOULEVARD", "QUAI",
                "PONT", "LAC", "FLEUVE", "COLLINE", "GARE", "CATHÉDRALE", "PLAGE", "ÎLE",
                "CALLE", "PLAZA", "RÍO", "STRASSE", "PLATZ", "MONTE", "SIERRA", "HÔTEL",
                "PALAIS", "CHÂTEAU", "ÉGLISE", "IGLESIA",
                # a house, an estate, a row of houses (not GROVE, HEATH: surnames more often)
                "PLACE", "LODGE", "COTTAGE", "MANOR", "GARDENS", "TERRACE", "CRESCENT", "BUILDINGS",
                "PARSONAGE", "RECTORY", "VICARAGE", "GRANGE", "PRIORY", "ESTATE"}
_EVENT_WORDS = {"CHRISTMAS", "WAR", "CONFERENCE", "SUMMIT", "FESTIVAL", "OLYMPICS", "ELECTION",
                "EVE", "DAY", "REVOLUTION", "FÊTE", "COLLOQUE", "CONFÉRENCE", "CONGRÈS",
                "GUERRE", "RÉVOLUTION", "ÉLECTION", "ÉLECTIONS", "EXPOSITION", "FIESTA",
                "GUERRA", "KRIEG"}
_SPEECH_VERBS = {"said", "says", "asked", "replied", "cried", "thought", "answered", "exclaimed"}
# ("at" is not one: at Microsoft, at Stanford say a workplace as often as at Pemberley a place;
# `_guess_type` lets the name's other mentions decide.)
_PLACE_PREPOSITIONS = {"in", "near", "across", "through", "throughout", "around",
                       "à", "au", "aux", "dans", "vers", "près", "en", "nach", "bei", "desde"}
# Words before "at" that make what follows an organization: work, study, a member's role.
_MEMBER_WORDS = {"work", "works", "worked", "working", "job", "jobs", "intern", "interned",
                 "internship", "internships", "career", "engineer", "engineers", "researcher",
                 "researchers", "scientist", "scientists", "professor", "professors",
                 "employed", "employee", "employees", "colleague", "colleagues", "student",
                 "students", "studied", "studying", "undergrad", "phd", "faculty", "team",
                 "teams", "group", "lab", "department", "role", "advocate", "executive",
                 "executives", "ceo", "cto", "cfo", "founder", "cofounder", "president",
                 "director", "manager", "vp", "staff"}
# Words that are capitalised because they start a sentence or are pronouns/titles, not names.
_STOPWORDS = set("""
a about above after again against all also am an and another any are as at be because been
before being below between both but by can could did do does doing down during each either even
ever every few for from further had has have having he her here hers herself him himself his how
however i if in into is it its itself just let like many may me might mine more most much must
my myself neither never no nor not now o of off oh on once one only or other our ours ourselves
out over own perhaps quite rather really same shall she should so some still such than that the
their theirs them themselves then there these they this those though through thus to too under
until up upon us very was we well were what whatever when where whether which while who whom
whose why will with within without would yes yet you your yours yourself yourselves ah aye nay
ha hallo hello hey hi okay ok yeah sure right good great thank thanks please sorry god
monday tuesday wednesday thursday friday saturday sunday january february march april june july
august september october november december chapter stave part section episode transcript
illustration note contents page later meanwhile finally today yesterday tomorrow recently
suddenly afterwards soon next
eh uh um umm hmm huh bah wow yep nope whoa gee alas hush pooh humbug
zero two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
hundred thousand million billion second third fourth fifth sixth seventh eighth ninth tenth
heading tailpiece frontispiece list illustrations appendix preface footnote
nobody everybody somebody anybody everyone someone anyone something nothing everything anything
always see assure
laughter applause crosstalk inaudible
""".split())
# Nationality and language adjectives: words about a name, not names (AMERICAN, FRENCH). A
# phrase made of one of these alone is dropped; "French Revolution" stays.
_DEMONYMS = set("""
american americans british english french german germans italian spanish portuguese dutch
russian chinese japanese korean indian african european asian canadian mexican brazilian
australian irish scottish welsh greek roman swiss swedish norwegian danish finnish polish
czech hungarian turkish arab arabic persian israeli egyptian jewish christian muslim catholic
protestant latin western eastern northern southern venezuelan argentine argentinian
""".split())


# Capitalised abbreviations of roles, degrees and devices (CEO, PHD, TV): never a name alone,
# the way "American" is not; "PC World" stays.
_COMMON_ABBREVIATIONS = set("""
ceo cto cfo coo cio cmo cso vp svp evp phd mba bsc msc tv pc cd dvd rom cpu gpu usb led lcd
iq faq pdf am pm
""".split())
# Abbreviations of fields and technologies (AI, VR, API): names of things, of no type a cue
# could give ("in AI" is no place, "AI announced" no company), and no initials of whatever
# longer name they match (entity resolution: VR is not VPL RESEARCH).
CONCEPT_ABBREVIATIONS = {"AI", "ML", "VR", "AR", "XR", "API", "APIS", "SQL", "HTML", "DNA",
                         "RNA", "GPS", "IOT", "NLP", "UI", "UX", "OS", "LLM", "LLMS", "AGI"}


# Prepositions of other languages that open sentences but never a name (articles may: La Paz,
# Los Angeles, Le Monde).
_LEADING_PREPOSITIONS = set("""
sur dans pour par avec au aux selon chez vers depuis pendant après avant entre sous
según desde hacia durante para por con sin sobre nach mit bei seit während über unter
""".split())


# Words for people by their place in a family or a household, capitalised when they address
# someone ("Father, come in"): no name alone; "Father Christmas", "Mother Teresa" stay.
_ROLE_WORDS = set("""
father mother sister brother son daughter wife husband grandfather grandmother grandma grandpa
mum mom mummy mommy dad daddy mama papa madam friend man woman boy girl child baby gentleman
gentlemen ladies mistress servant married
""".split())

# Given names common in the languages the extractor reads: a lone one opening a sentence is a
# name even where the chunk never writes it mid-sentence ("Alice met Bob in Paris.").
GIVEN_NAMES = set("""
aaron adam adrian aisha alan albert alex alexander alexandra alexis alfred alice alicia alison
amanda amelia amy ana andrea andrew angela anna anne annie anthony antoine antonio arthur
ashley barbara beatrice ben benjamin bernard beth betty bill bob bruno camille carl carla carlos
carmen caroline catherine charles charlie charlotte chloe chris christian christine christopher
claire clara claude daniel david deborah diana diego dorothy edward eleanor elena elizabeth ella
ellen emily emma eric esther eva evelyn fatima felix fernando florence frances francesca
francis francisco françois françoise frank fred frederick george georges gloria grace hannah
harold harry heidi helen henri henry hugo ian isaac isabel isabella jack jacob jacques james
jane janet jean jeanne jennifer jessica jim joan joe john jonathan jordan jorge jose josé joseph
josephine juan judith julia julian julie juliette karen kate katherine kathleen kevin laura
lauren leo leon lisa louis louise lucas lucia lucy luis luke manuel marc marco margaret maria
marie mark martha martin mary matthew max michael michel michelle miguel mohamed mohammed nancy
natalie nathan nicholas nicolas nina noah oliver olivia oscar pablo patricia patrick paul paula
pedro peter philip philippe pierre rachel ralph raymond rebecca richard robert roger rose ruth
ryan sam samuel sandra sara sarah scott sean sophie stephen steve steven susan thomas tim timothy
tom victor victoria vincent walter william yusuf zoe
""".split())
# Verbs after a lone capitalised word that make it someone doing something ("Alice met").
_NAME_VERB_CUES = _SPEECH_VERBS | {
    "met", "meets", "told", "tells", "went", "goes", "came", "comes", "smiled", "laughed",
    "looked", "wrote", "writes", "called", "visited", "married", "lived", "died", "loved",
    "knew", "knows", "wanted", "wants", "saw", "sees", "took", "gave", "gives", "founded",
    "joined", "left", "arrived", "returned", "walked", "ran", "sat", "stood", "nodded",
    "shook", "turned", "dit", "a", "est", "était", "fut", "dijo", "fue", "sagte", "war"}
# Words after a sentence-opening capitalised word that make it a command ("Come in",
# "Bring me", "Catch hold of it"): a verb, not a name.
_COMMAND_OBJECTS = {"me", "him", "her", "us", "them", "it", "yourself", "yourselves", "here",
                    "along", "away", "back", "hold"}
# Text that addresses the model (prompt injection in a document): no entity of it, whatever
# its capitals.
_ADDRESSES_THE_MODEL = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|"
    r"your|the)\b.{0,20}\b(?:instructions?|prompts?|rules|directions)\b"
    r"|\b(?:system prompt|you are now|as an ai(?: language model)?|new instructions)\b",
    re.I)

# Articles that open names in other languages (La Paz, Los Angeles, Le Monde, Il Giornale).
_NAME_ARTICLES = {"la", "le", "les", "los", "las", "el", "il", "lo", "gli", "der", "die", "das"}

# Words of pity, fondness or time that open a sentence or a letter before a name ("Poor
# Edward!", "Dear Lizzy,", "Till Elizabeth came"), whether or not the chunk writes them in
# lower case: no part of it. (Kept, POOR ELINOR was an entity of its own and, being the
# longer name, the title resolution merged ELINOR into. Mid-sentence, the Poor Law stays.)
_BEFORE_NAMES = {"poor", "dear", "dearest", "till"}

# Words a name neither starts nor ends with, and lone words that are no name.
_NOT_LEADING = _STOPWORDS | _LEADING_PREPOSITIONS
_NOT_TRAILING = _STOPWORDS | {"and", "&", "of", "the"}
_NOT_NAMES_ALONE = _DEMONYMS | _COMMON_ABBREVIATIONS | _ROLE_WORDS


def split_sentences(text: str) -> list[str]:
    """Sentences and clauses (; and : end one here too), never cut after an abbreviation
    (Mr. Darcy, St. Paul, J. Watson, the U.S.)."""
    return split_at(text, _SENTENCE_END)


def _clean_phrase(phrase: str) -> str:
    phrase = re.sub(r"['’]s$", "", phrase.strip())
    words = phrase.split()
    while words:
        if re.match(r"[ld]['’](?=[^\W\d_])", words[0]):  # l'Hôtel de Ville -> Hôtel de Ville
            words[0] = words[0][2:]
        # A leading contraction (I'm, Don't, We'll) is no name; a possessive (Wolf's Crag)
        # may be; a capitalised preposition opening a sentence (Selon, Sur, Dans) is none.
        elif words[0].lower() in _NOT_LEADING or \
                re.search(r"['’](?!s$)|n['’]t$", words[0], re.I):
            words = words[1:]
        else:
            break
    while words and words[-1].lower() in _NOT_TRAILING:
        words = words[:-1]
    return " ".join(words)


def _is_sentence_start(sentence: str, position: int) -> bool:
    return not re.search(r"[^\W_]", sentence[:position])


def find_entities(sentence: str, lowercase_words: set[str], midsentence_words: set[str],
                  common: set[str] = frozenset(), open_end: bool = False
                  ) -> list[tuple[str, tuple[str, bool]]]:
    """(NAME, (TYPE, supported by the text)) pairs in one sentence, in order of appearance,
    without repeats. `common`: capitalised words the whole document also writes in lower
    case (`document_words`); `open_end`: the sentence ends where its text was cut."""
    found: dict[str, tuple[str, bool]] = {}
    letters = [c for c in sentence if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.5 * len(letters):
        return []  # Shouted text (headings, licence boilerplate): capitals carry no signal.
    if _ADDRESSES_THE_MODEL.search(sentence):
        return []
    # "MIT's Ben Bloomberg" holds two names; a same-length substitute keeps offsets valid.
    for match in _PHRASE.finditer(_POSSESSIVE.sub(" ,", sentence)):
        phrase = _clean_phrase(match.group())
        if not phrase or len(phrase) < 2 or re.search(r"['’](ll|re|ve|d|m|t)$", phrase, re.I):
            continue
        # "Scrooge! Scrooge!" and "Scrooge Scrooge" name one man.
        words = [w for i, w in enumerate(phrase.split()) if i == 0 or w != phrase.split()[i - 1]]
        if open_end and not sentence[match.end():].strip():
            continue
        at_start = _is_sentence_start(sentence, match.start())
        words = _without_common(words, at_start, common, midsentence_words)
        if not words:
            continue
        if at_start and len(words) > 1 and words[0] not in midsentence_words and \
                words[0].lower() not in _NAME_ARTICLES and (
                words[0].lower() in lowercase_words or words[0].lower() in _BEFORE_NAMES or
                re.search(r"(?:ing|ed)$", words[0])):
            # A sentence-opening verb or `_BEFORE_NAMES` word before a name ("Take LinkedIn",
            # "Excluding the LinkedIn", "Poor Edward"): the name is what follows.
            words = _clean_phrase(" ".join(words[1:])).split()
            if not words:
                continue
        phrase = " ".join(words)
        if len(words) > _MAX_NAME_WORDS:
            continue
        if len(words) == 1:
            word = words[0]
            following = sentence[match.end():].split()[:1]
            following = re.sub(r"\W", "", following[0]).lower() if following else ""
            # A lone capitalised word is a name only if the chunk never uses it in lower case
            # and, at a sentence start, also capitalises it mid-sentence somewhere, is a
            # given name, or does something ("Alice met"); never when a command's object
            # follows ("Come in", "Bring me").
            if word.lower() in lowercase_words and not word.isupper():
                continue
            if at_start and (following in _COMMAND_OBJECTS or (
                    word not in midsentence_words and word.lower() not in GIVEN_NAMES
                    and following not in _NAME_VERB_CUES)):
                continue
            if word.upper() in _HONORIFICS or word.lower() in _NOT_NAMES_ALONE:
                continue
        name = normalize_name(phrase)
        if name not in found:
            found[name] = _guess_type(words, sentence, match.start(), match.end())
    return list(found.items())


# Words that make a two- or three-word name something other than a person's.
_NOT_PERSON_WORDS = {"TIMES", "NEWS", "SCIENCE", "SCIENCES", "TECH", "TECHNOLOGY", "LAW", "LAWS",
                     "RESEARCH", "WORLD", "LIST", "CITY", "STUDIO", "SERVER", "OFFICE", "WINDOWS",
                     "TEAM", "PROJECT", "PROGRAM", "PROGRAMME", "ILLUSTRATIONS", "SPIRITS",
                     "LEARNING", "INTELLIGENCE", "VALLEY", "REVIEW", "SHOW", "PODCAST", "GAMES",
                     "MUSIC", "CLOUD", "DATA", "LABORATORY", "NETWORK", "SYSTEMS", "AWARD",
                     "AWARDS", "PRIZE", "CUP", "LEAGUE", "ACT", "BILL", "TREATY", "EDITION"}
_PERSON_BEFORE = {"mr", "mrs", "ms", "dr", "sir", "miss", "madam", "president", "professor",
                  "prof", "uncle", "aunt", "captain", "senator", "governor", "ceo", "cto",
                  "founder", "colleague", "wife", "husband", "son", "daughter", "brother",
                  "sister", "father", "mother", "friend"}
_PERSON_AFTER = _SPEECH_VERBS | {"who", "whose", "himself", "herself", "smiled", "laughed",
                                 "wrote", "says", "tells", "told"}
# Words before "at" that make what follows no place: a person (looked at Elizabeth, angry at
# Lydia) or an address (e-mail us at BehindTheTech, a transcribed e-mail address).
_AT_NO_PLACE = {"us", "me", "look", "looks", "looked", "looking", "glance", "glanced",
                "glancing", "gaze", "gazed", "stare", "stared", "staring", "smile", "smiled",
                "smiling", "laugh", "laughed", "laughing", "frown", "frowned", "point",
                "pointed", "aimed", "angry", "surprised", "astonished", "shocked", "amazed",
                "vexed", "hinted", "wonder", "wondered", "shouted", "yelled", "nodded", "winked",
                "peeped", "mad", "upset", "annoyed", "offended", "disappointed", "directed",
                "glared", "sneered", "grinned"}
# Words before "on" that make what follows a person (called on Mrs Jennings, depended on
# Elinor).
_ON_SOMEONE = {"call", "called", "calling", "wait", "waited", "waiting", "attend", "attended",
               "attending", "depend", "depended", "depends", "depending", "rely", "relied",
               "look", "looked", "looking", "smile", "smiled", "gazed", "fixed", "turned",
               "doted", "dote", "insisted", "pressed", "imposed", "intrude", "intruded",
               "spied", "cheated", "revenge", "pity", "mercy", "hard", "congratulate",
               "congratulated", "pounced", "fell", "fallen", "leaned", "leaning"}
_ORG_BEFORE = {"joined", "founded", "cofounded", "co-founded", "acquired"}
_ORG_AFTER = {"announced", "acquired", "released", "launched", "shipped", "hired", "employees",
              "inc", "corp"}


def _without_common(words: list[str], at_start: bool, common: set[str],
                    midsentence_words: set[str]) -> list[str]:
    """A phrase without the document's common words where case is no evidence of a name:
    one that opens the sentence alone ("Although a fog") or before a name the document
    knows ("Call Bradshaw"; not "Black Mail House", a name of its own), and an all-capital
    one after a name in other case (emphasis: "Utterson ALONE")."""
    if at_start and words and words[0] in common and words[0] not in midsentence_words and \
            (len(words) == 1 or len(words) == 2 and words[1] in midsentence_words):
        words = words[1:]
    for i, word in enumerate(words):
        if i and word.isupper() and len(word) > 1 and word in common and \
                not all(w.isupper() for w in words):
            return words[:i]
    return words


def _guess_type(words: list[str], sentence: str, start: int, end: int) -> tuple[str, bool]:
    """The type one mention suggests, and whether something in the text says so (a title, a
    kind word, a cue around it) or it is only a guess from the name's shape."""
    upper = [w.upper().strip(".") for w in words]
    if len(upper) == 1 and upper[0] in CONCEPT_ABBREVIATIONS:
        return "OTHER", False
    if upper[0] in _HONORIFICS:
        return "PERSON", True
    if sentence[end:end + 1] == ":" and not re.search(r"\w", sentence[:start].split("\n")[-1]):
        return "PERSON", True  # a speaker's label, opening its line (not "fled from Thornfield:")
    if len(words) == 1 and words[0].lower() in GIVEN_NAMES:
        return "PERSON", True
    if upper[-1] in _ORG_WORDS or (len(words) > 1 and upper[0] in _ORG_WORDS):
        return "ORGANIZATION", True
    if upper[-1] in _PLACE_WORDS or (len(words) > 1 and upper[0] in _PLACE_WORDS):
        return "GEO", True
    if any(w in _EVENT_WORDS for w in upper):
        return "EVENT", True
    before = sentence[:start].split()[-2:] if start else []
    after = sentence[end:].split()[:1]
    before_word = re.sub(r"\W", "", before[-1]).lower() if before else ""
    two_before = re.sub(r"\W", "", before[0]).lower() if len(before) == 2 else ""
    after_word = re.sub(r"[^\w-]", "", after[0]).lower() if after else ""
    if before_word in _PERSON_BEFORE or after_word in _PERSON_AFTER \
            or before_word in _SPEECH_VERBS:
        return "PERSON", True
    if before_word in _ORG_BEFORE or after_word in _ORG_AFTER or \
            (before_word == "at" and two_before in _MEMBER_WORDS):
        return "ORGANIZATION", True
    if before_word == "at" and two_before not in _AT_NO_PLACE and \
            not re.match(r"[@.]\w", sentence[end:end + 2]) and after_word not in ("at", "dot"):
        # (Not an address: at X@example.com, a transcript's "at Behind the Tech at
        # Microsoft dot com".)
        # A place or an organization (dined at Netherfield, an intern at Pixar), which the
        # name's other mentions decide (`merge.EITHER`); never a person.
        return f"GEO{EITHER}ORGANIZATION", False
    if before_word == "on" and two_before not in _ON_SOMEONE and len(words) == 1:
        # A platform or a service (on YouTube, on TikTok): guessed a company's; a place
        # named after "on" (on Main Street) has its kind word, an island or a planet its
        # "in" and "to" elsewhere to outweigh it.
        return "ORGANIZATION", False
    if len(words) == 1 and words[0].isupper() and len(words[0]) <= 6:
        # An acronym is a company's (NASA, IBM) as often as a field's, a product's or a
        # disease's (STEM, GPT, BASIC, COVID): its shape says nothing, and a cue elsewhere
        # in the corpus ("worked at NASA") types it. (Guessed ORGANIZATION, it put four of
        # the podcast's 100 most mentioned names under the wrong type and none right.)
        return "OTHER", False
    if before_word in _PLACE_PREPOSITIONS and not sentence[end:end + 2].startswith(("'", "’")):
        # "in" also comes before fields, products and companies (in Roblox, in computer
        # science): a place only when nothing else is said of the name.
        return "GEO", False
    if len(words) in (2, 3) and not set(upper) & _NOT_PERSON_WORDS and \
            not any(w.islower() for w in words):
        return "PERSON", False
    return "OTHER", False


def voted_type(votes: list[tuple[str, bool]]) -> str:
    """A name's type from its mentions in the chunk: the most frequent type the text supports
    (ties: the first seen), else the most frequent guess marked as one (`GUESSED_TYPE`: the
    merge weighs a guess less than a type with evidence), else OTHER."""
    for strong in (True, False):
        kinds = [kind for kind, evidence in votes if evidence == strong and kind != "OTHER"]
        if kinds:
            kind = max(dict.fromkeys(kinds), key=kinds.count)
            return kind if strong else kind + GUESSED_TYPE
    return "OTHER"


_HEADING_JOINERS = {"to", "of", "the", "and", "a", "an", "in", "on", "at", "for", "with", "by"}


def _is_heading(line: str) -> bool:
    """A title-case line (3 to 12 words, every one but joiners capitalised) with no sentence
    punctuation at its end: a heading, a table of contents or illustrations entry, whose
    capitals say nothing of names."""
    if line.rstrip()[-1:] in ".!?:;,\"'”’)":
        return False
    words = [w for w in line.split() if w[:1].isalpha() and w.lower() not in _HEADING_JOINERS
             and not re.fullmatch(r"[ivxlcdm]+", w.lower())]  # page numbers: x, xi
    return 3 <= len(words) <= 12 and all(w[0].isupper() for w in words)


def _trim(sentence: str, limit: int) -> str:
    sentence = re.sub(r"\s+", " ", sentence).strip()
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


_MIDSENTENCE_CAPITAL = re.compile(
    rf"(?<=[{_LOWER_RANGES},] ){_UPPER}{_LETTER}*(?:['’\-]{_LETTER}+)*")


def midsentence_capitals(text: str) -> set[str]:
    """Words a document capitalises mid-sentence and never writes in lower case: names, where
    they open a sentence of any of its chunks. A word it also writes in lower case ("Yet to
    Come", "come in") is left to each chunk's own evidence."""
    text = text.replace("_", " ")
    lower = set(re.findall(rf"\b{_LOWER}(?:{_LETTER}|['’\-])+\b", text))
    return {word for word in _MIDSENTENCE_CAPITAL.findall(text) if word.lower() not in lower}


COMMON = "-"  # marks, in a document's words, one it also writes in lower case
_CAPITALISED = re.compile(rf"\b{_UPPER}{_LETTER}+\b")


def document_words(text: str) -> set[str]:
    """What a document says of its capitalised words, for each of its chunks: its names
    (`midsentence_capitals`), and, marked `COMMON`, the capitalised words it also writes in
    lower case ("Although", "Call", an emphatic "ALONE"): common words wherever a sentence
    opens with them or a line shouts them, the document's own evidence in any language."""
    text = text.replace("_", " ")
    lower = set(re.findall(rf"\b{_LOWER}(?:{_LETTER}|['’\-])+\b", text))
    names = midsentence_capitals(text)
    return names | {COMMON + word for word in set(_CAPITALISED.findall(text))
                    if word.lower() in lower and word not in names}


def extract_nlp(text: str, max_description_chars: int = 400,
                document_capitals: set[str] | None = None) -> ParsedRecords:
    """`document_capitals`: the words other chunks of the same document capitalise
    mid-sentence (`midsentence_capitals`), so a name that opens every sentence of this chunk
    is still known for one."""
    records = ParsedRecords()
    given = document_capitals or set()
    common = {word[1:] for word in given if word.startswith(COMMON)}
    document_capitals = {word for word in given if not word.startswith(COMMON)}
    text = text.replace("_", " ")  # Markdown/Gutenberg italics: "_Bob Cratchit_"
    text = "\n".join("" if _is_heading(line) else line for line in text.split("\n"))
    # Transcripts' speaker labels ("SAM ALTMAN:") in the case names are read in.
    text = _SPEAKER_LABEL.sub(lambda m: m.group(1) + m.group(2).title() + ":", text)
    lowercase_words = set(re.findall(rf"\b{_LOWER}(?:{_LETTER}|['’\-])+\b", text))
    midsentence_words = set(_MIDSENTENCE_CAPITAL.findall(text)) | (document_capitals or set())
    entity_sentences: dict[str, list[str]] = {}
    type_votes: dict[str, list[tuple[str, bool]]] = {}
    pair_sentences: dict[tuple[str, str], list[str]] = {}
    uncased = UncasedChunk(text) if is_uncased(text) or re.search(r"[\u3400-\u9fff]", text) \
        else None
    sentences = split_sentences(text)
    # A window of a longer text may end inside a word ("Inspector Newcom|en"): a name that
    # runs into its last character is left to the next window, which holds it whole.
    cut = bool(text) and text[-1].isalnum()
    for number, sentence in enumerate(sentences):
        if uncased is not None and is_uncased(sentence):  # the tagger's types are evidence
            entities = [(name, (kind, kind != "OTHER")) for name, kind in
                        uncased.entities(sentence)]
        else:
            entities = find_entities(sentence, lowercase_words, midsentence_words, common,
                                     open_end=cut and number == len(sentences) - 1)
        clean = _trim(sentence, max_description_chars)
        for name, vote in entities:
            type_votes.setdefault(name, []).append(vote)
            entity_sentences.setdefault(name, []).append(clean)
        for (a, _), (b, _) in combinations(entities, 2):
            pair_sentences.setdefault(tuple(sorted((a, b))), []).append(clean)
    for name, sentences in entity_sentences.items():
        records.entities.append({"title": name, "type": voted_type(type_votes[name]),
                                 "description": " ".join(dict.fromkeys(sentences[:2]))})
    for (source, target), sentences in pair_sentences.items():
        records.relationships.append({
            "source": source, "target": target,
            "description": sentences[0],
            "strength": float(len(sentences)),
        })
    return records
