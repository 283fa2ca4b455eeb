import BluetoothGATT
import Values

/// One configured service as the pipeline published it, for a reload to compare with.
struct PublishedLayoutService: Sendable {
    /// The service's position in the configuration.
    let index: Int
    /// The service as it was laid out for the attribute database.
    let service: GATTService
    let published: PublishedService
    /// Its characteristics, in configuration order.
    let refs: [CharacteristicRef]
}

/// Which services a reload's GATT layout keeps published, removes and publishes anew.
///
/// A configured service stays as it is (its handles, and the centrals' subscriptions to it) when
/// it is at the same position in the configuration, its characteristics have the same names, and
/// it lays out to the same GATT service, the services it includes staying too. Any other is
/// removed and published again: handles of a changed service cannot be trusted by a central that
/// cached them, so it learns of them through Service Changed.
struct GATTLayoutChange {
    private(set) var kept: [PublishedLayoutService] = []
    private(set) var removed: [PublishedLayoutService] = []
    /// Positions in the new configuration to publish, in publishing order.
    private(set) var added: [Int] = []

    init(from old: [PublishedLayoutService], to layout: GATTLayout) throws(ValueError) {
        let before = Dictionary(old.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        var keptIDs: [String: GATTServiceID] = [:]
        var keptIndices: Set<Int> = []
        for index in layout.publishingOrder {
            let service = try layout.service(index) { keptIDs[$0] }
            guard let previous = before[index],
                layout.includedServiceNames(index).allSatisfy({ keptIDs[$0] != nil }),
                service == previous.service, layout.refs(ofService: index) == previous.refs
            else {
                added.append(index)
                continue
            }
            kept.append(previous)
            keptIndices.insert(index)
            if let name = layout.serviceName(index) { keptIDs[name] = previous.published.id }
        }
        removed = old.filter { !keptIndices.contains($0.index) }
    }

    var isEmpty: Bool { removed.isEmpty && added.isEmpty }
}
