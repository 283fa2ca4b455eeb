// Placeholder until the ATT layer lands; replaced, not extended.
