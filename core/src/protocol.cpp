// (implementation lands with the engine)
