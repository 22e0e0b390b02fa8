"""Entity resolution: merged entities that name the same real thing become one (`stage.py`),
with every alias kept (`entity_aliases`)."""
