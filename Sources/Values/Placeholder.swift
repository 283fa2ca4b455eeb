// Placeholder until the Values layer lands; replaced, not extended.
