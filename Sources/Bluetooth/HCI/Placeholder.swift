// Placeholder until the HCI layer lands; replaced, not extended.
