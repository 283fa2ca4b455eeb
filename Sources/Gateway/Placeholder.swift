// Placeholder until the Gateway layer lands; replaced, not extended.
