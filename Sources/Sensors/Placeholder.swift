// Placeholder until the Sensors layer lands; replaced, not extended.
