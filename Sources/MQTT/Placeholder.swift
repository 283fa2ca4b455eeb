// Placeholder until the MQTT layer lands; replaced, not extended.
