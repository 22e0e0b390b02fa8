"""Index table names and columns, shared by writers and readers.

Columns follow Microsoft GraphRAG's output tables so that its users' tools read ours.
Extra columns we add are listed last in each table.
"""

DOCUMENTS = "documents"
TEXT_UNITS = "text_units"
ENTITIES = "entities"
RELATIONSHIPS = "relationships"
COMMUNITIES = "communities"
COMMUNITY_REPORTS = "community_reports"
COVARIATES = "covariates"
# Entity resolution: each alias merged into a canonical entity (`index/resolve/`).
ENTITY_ALIASES = "entity_aliases"
# Vectors (id, vector) for similarity retrieval; the names follow Microsoft GraphRAG's
# embedding fields (entity.description, text_unit.text, community.full_content).
ENTITY_DESCRIPTION_EMBEDDINGS = "embeddings_entity_description"
TEXT_UNIT_EMBEDDINGS = "embeddings_text_unit_text"
REPORT_EMBEDDINGS = "embeddings_community_full_content"

DOCUMENT_COLUMNS = ["id", "human_readable_id", "title", "text", "text_unit_ids", "creation_date",
                    "metadata"]
TEXT_UNIT_COLUMNS = ["id", "human_readable_id", "text", "n_tokens", "document_ids",
                     "entity_ids", "relationship_ids", "covariate_ids",
                     "document_id", "extraction_status", "extraction_error"]
ENTITY_COLUMNS = ["id", "human_readable_id", "title", "type", "description", "text_unit_ids",
                  "frequency", "degree", "x", "y", "descriptions", "aliases"]
RELATIONSHIP_COLUMNS = ["id", "human_readable_id", "source", "target", "description", "weight",
                        "combined_degree", "text_unit_ids", "instance_count", "descriptions"]
COMMUNITY_COLUMNS = ["id", "human_readable_id", "community", "level", "parent", "children",
                     "title", "entity_ids", "relationship_ids", "text_unit_ids", "period", "size"]
COMMUNITY_REPORT_COLUMNS = ["id", "human_readable_id", "community", "level", "parent",
                            "children", "title", "summary", "full_content", "rank",
                            "rating_explanation", "findings", "full_content_json", "period",
                            "size", "generation"]
ENTITY_ALIAS_COLUMNS = ["alias", "alias_entity_id", "entity_id", "entity_title", "score", "method",
                        "evidence", "document_ids"]
COVARIATE_COLUMNS = ["id", "human_readable_id", "covariate_type", "type", "description",
                     "subject_id", "object_id", "status", "start_date", "end_date",
                     "source_text", "text_unit_id"]

# `text_units.extraction_status` of a passage repeated across documents (a licence, a
# disclaimer): in the index once, never extracted nor in an answer's context
# (`index/chunks/repeated_passages.py`).
REPEATED_PASSAGE = "repeated_passage"

MANIFEST = "manifest.json"
INDEX_FORMAT_VERSION = 1
