// Placeholder until the GATT layer lands; replaced, not extended.
