"""fagen in other libraries' attention hooks (transformers)."""
