// Placeholder until the L2CAP layer lands; replaced, not extended.
