// Placeholder until the Host layer lands; replaced, not extended.
