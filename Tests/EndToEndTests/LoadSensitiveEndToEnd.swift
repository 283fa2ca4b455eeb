import Testing

/// The end-to-end suites that load the 2-core machine hardest (a 10 kHz line, eight phones,
/// 10,000 writes) or measure latency (phone write → MQTT `/written`), nested here so that they
/// run one after another: one's load must not skew another's timing. Other suites still run
/// beside them.
@Suite(.serialized) enum LoadSensitiveEndToEnd {}
