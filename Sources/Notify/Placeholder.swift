// Placeholder until the Notify layer lands; replaced, not extended.
