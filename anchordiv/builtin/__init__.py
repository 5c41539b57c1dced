"""The built-in contrastive model trained on the emoji world (text tower: frozen MiniLM)."""
