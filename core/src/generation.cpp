// (implementation lands with its component)
