"""The composition root the front ends share: the runtime built from settings, the default tool set."""
