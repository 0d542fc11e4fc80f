"""Key state: what was last pushed, as keys and row hashes; how it is stored, read and diffed."""
