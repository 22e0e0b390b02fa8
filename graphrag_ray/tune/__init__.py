"""`graphrag-ray prompt-tune`: prompts and entity types fitted to a corpus.

sample.py (the chunks the tuning reads), language.py (which language they are in),
tuning.py (domain, persona, entity types and worked examples: asked of the LLM, or taken from
the offline extractor), compose.py (the tuned prompt files, from the built-ins), project.py
(the folder it writes: settings.yaml, prompts/, tuning.json), run.py (the command, start to
end).
"""
