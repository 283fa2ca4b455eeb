// Placeholder until the GPIO layer lands; replaced, not extended.
