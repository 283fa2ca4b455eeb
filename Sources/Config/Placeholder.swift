// Placeholder until the Config layer lands; replaced, not extended.
