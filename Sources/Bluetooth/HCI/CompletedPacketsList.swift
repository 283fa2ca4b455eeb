import BluetoothCore

extension HCIEvent {
    /// The entries of a Number Of Completed Packets event (Core Vol 4 Part E 7.7.19), one per
    /// connection handle, in the order the controller lists them.
    ///
    /// The controller sends this event for every packet the host sent, so the first four entries
    /// (a controller reports the few links a gateway keeps, usually one per event) are held
    /// inline and decoding the event allocates nothing; any more go to an array.
    public struct CompletedPacketsList: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral,
        Equatable, Sendable
    {
        private var inline = InlineArray<4, CompletedPackets>(repeating: CompletedPackets(handle: 0, count: 0))
        /// Nil, not an empty array, while the inline entries suffice: a list copied or destroyed
        /// then has no reference to count (the empty array's storage, for every event).
        private var overflow: [CompletedPackets]?
        public private(set) var count = 0

        public init() {}

        public init(_ entries: some Sequence<CompletedPackets>) {
            for entry in entries { append(entry) }
        }

        public init(arrayLiteral entries: CompletedPackets...) {
            self.init(entries)
        }

        /// Decodes the event's parameters (Vol 4 Part E 7.7.19): the number of handles, then every
        /// handle, then every count, each little-endian. `event` is the whole event, its two-byte
        /// header checked already: read in place, with no slice of its own (which would retain
        /// the buffer). Bytes after the last count are ignored.
        init(event: borrowing ArraySlice<UInt8>) throws(HCIDecodingError) {
            let parameters = event.startIndex + 2
            guard parameters < event.endIndex, event.endIndex - parameters >= 1 + 4 * Int(event[parameters]) else {
                throw .truncated(what: "HCI event 0x\([Code.numberOfCompletedPackets].hexString) parameters")
            }
            let entries = Int(event[parameters])
            let handles = parameters + 1
            let counts = handles + 2 * entries
            for entry in 0..<entries {
                append(
                    CompletedPackets(
                        handle: Self.uint16(in: event, at: handles + 2 * entry) & 0x0FFF,
                        count: Self.uint16(in: event, at: counts + 2 * entry)))
            }
        }

        private static func uint16(in bytes: ArraySlice<UInt8>, at index: Int) -> UInt16 {
            UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { count }

        public subscript(position: Int) -> CompletedPackets {
            get {
                precondition(position >= 0 && position < count, "completed packets entry \(position) out of range")
                return position < inline.count ? inline[position] : overflow![position - inline.count]
            }
            set {
                precondition(position >= 0 && position < count, "completed packets entry \(position) out of range")
                if position < inline.count {
                    inline[position] = newValue
                } else {
                    overflow![position - inline.count] = newValue
                }
            }
        }

        public mutating func append(_ entry: CompletedPackets) {
            if count < inline.count {
                inline[count] = entry
            } else if overflow == nil {
                overflow = [entry]
            } else {
                overflow!.append(entry)
            }
            count += 1
        }

        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.elementsEqual(rhs) }
    }
}
