import BluetoothATT
import BluetoothCore
import LoopClock

/// A request that fails: the handle and error its Error Response names.
struct ATTFailure: Error {
    let handle: UInt16
    let code: ATTErrorCode
    init(_ handle: UInt16, _ code: ATTErrorCode) {
        self.handle = handle
        self.code = code
    }
}

/// A validated write, applied only once every write of its batch has been validated.
private enum PendingWrite {
    case clientConfiguration(PublishedCharacteristic, handle: UInt16, bits: UInt16)
    case clientSupportedFeatures(UInt8)
    case dynamic(GATTWriteRequest)
}

extension GATTServer {
    /// Handles one ATT PDU from a central (the payload of L2CAP CID 0x0004).
    ///
    /// Every request (every opcode without the Command flag that is not a response, notification,
    /// indication or confirmation) is answered by exactly one PDU; commands and unexpected PDUs
    /// are applied or dropped, never answered. Nothing here traps on malformed input.
    public func receive(_ bytes: [UInt8], from id: CentralID, now: LoopInstant) {
        guard let central = central(id) else { return }
        expireTransaction(of: central, now: now)
        guard !central.isClosed else { return }

        // A PDU longer than the ATT_MTU breaks the bearer's contract (Vol 3 Part F 3.2.8): a
        // request gets Invalid PDU, anything else is dropped. Answers then never exceed the MTU
        // (a Prepare Write Response echoes its request).
        if bytes.count > Int(central.mtu) {
            if let raw = bytes.first, ATTOpcode.isRequest(raw) { reject(raw, 0, .invalidPDU, to: central) }
            return
        }
        let pdu: ATTPDU
        do throws(ATTDecodingError) {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            switch error {
            case .empty: break
            case .unknownOpcode(let raw):
                if ATTOpcode.isRequest(raw) { reject(raw, 0, .requestNotSupported, to: central) }
            case .malformed(let opcode, _):
                if opcode.isRequest { reject(opcode.rawValue, 0, .invalidPDU, to: central) }
            }
            return
        }
        let opcode = pdu.opcode
        guard passesRobustCaching(pdu, central) else { return }
        // After the answer, which the request's handling below produces.
        defer {
            if appliedWrites {
                appliedWrites = false
                emit(.writesApplied)
            }
        }

        if opcode.isRequest {
            do throws(ATTFailure) {
                send(try respond(to: pdu, from: central, now: now), to: central)
            } catch {
                reject(opcode.rawValue, error.handle, error.code, to: central)
            }
            return
        }
        switch pdu {
        case .writeCommand(let handle, let value):
            // Unanswered: a write that cannot be applied is dropped (Vol 3 Part F 3.4.5.3), and
            // reported to the program, which counts it.
            do throws(ATTFailure) {
                try commit([try validateWrite(handle, offset: 0, value: value, kind: .command, central)], central)
            } catch {
                emit(.writeCommandRefused(central.id, handle: error.handle, error.code))
            }
        case .handleValueConfirmation:
            confirmIndication(central, now: now)
        default:
            // Signed Write Commands need the CSRK from pairing, which this server does not hold
            // yet, so they are ignored as the spec requires of an unverifiable signature.
            // Responses, notifications and indications belong to a client role we do not play.
            break
        }
    }

    private func reject(_ opcode: UInt8, _ handle: UInt16, _ code: ATTErrorCode, to central: CentralState) {
        send(.errorResponse(requestOpcode: opcode, handle: handle, error: code), to: central)
    }

    /// Robust caching gate (Vol 3 Part G 2.5.2.1): a change-unaware client gets one Database Out
    /// Of Sync error for a request at a handle (or a list of handles) and for a Read By Type of a
    /// value over part of the database; its commands are ignored; reading the Database Hash by
    /// type, and the next request after the error, make it change-aware again. Exchange MTU and
    /// the discovery requests (over a range, or for the declarations over every handle) are
    /// answered as they are: they are how the client catches up.
    private func passesRobustCaching(_ pdu: ATTPDU, _ central: CentralState) -> Bool {
        guard !central.isChangeAware else { return true }
        switch pdu {
        case .exchangeMTURequest, .handleValueConfirmation, .findInformationRequest, .findByTypeValueRequest,
            .readByGroupTypeRequest:
            return true
        case .readByTypeRequest(_, let type) where type == .databaseHash:
            central.isChangeAware = true
            return true
        case .readByTypeRequest(let range, let type)
        where type == .includedService || type == .characteristicDeclaration
            || (range.start == 0x0001 && range.end == 0xFFFF):
            return true
        case .writeCommand, .signedWriteCommand:
            return false
        default:
            guard pdu.opcode.isRequest else { return true }
            if central.sentOutOfSync {
                central.isChangeAware = true
                central.sentOutOfSync = false
                return true
            }
            central.sentOutOfSync = true
            reject(pdu.opcode.rawValue, 0, .databaseOutOfSync, to: central)
            return false
        }
    }

    private func confirmIndication(_ central: CentralState, now: LoopInstant) {
        guard let outstanding = central.outstandingIndication else { return }
        central.outstandingIndication = nil
        if outstanding.isServiceChanged { central.isChangeAware = true }
        pumpIndications(central, now: now)
        roomFreed()
    }

    // MARK: Requests

    private func respond(to pdu: ATTPDU, from central: CentralState, now: LoopInstant) throws(ATTFailure) -> ATTPDU {
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            let mtu = min(max(clientMTU, ATTPDU.defaultMTU), configuration.maximumMTU)
            if mtu != central.mtu {
                central.mtu = mtu
                emit(.mtuChanged(central.id, mtu: mtu))
            }
            return .exchangeMTUResponse(serverRxMTU: configuration.maximumMTU)
        case .findInformationRequest(let range):
            return try findInformation(range, central)
        case .findByTypeValueRequest(let range, let type, let value):
            return try findByTypeValue(range, type: type, value: value, central)
        case .readByTypeRequest(let range, let type):
            return try readByType(range, type: type, central)
        case .readRequest(let handle):
            let value = try read(try existing(handle), offset: 0, central)
            return .readResponse(Array(value.prefix(Int(central.mtu) - 1)))
        case .readBlobRequest(let handle, let offset):
            return try readBlob(handle, offset: Int(offset), central)
        case .readMultipleRequest(let handles):
            var values: [UInt8] = []
            for handle in handles { values += try read(try existing(handle), offset: 0, central) }
            return .readMultipleResponse(Array(values.prefix(Int(central.mtu) - 1)))
        case .readMultipleVariableRequest(let handles):
            return try readMultipleVariable(handles, central)
        case .readByGroupTypeRequest(let range, let type):
            return try readByGroupType(range, type: type, central)
        case .writeRequest(let handle, let value):
            try commit([try validateWrite(handle, offset: 0, value: value, kind: .request, central)], central)
            return .writeResponse
        case .prepareWriteRequest(let handle, let offset, let value):
            let attribute = try existing(handle)
            try checkWrite(attribute, kind: .request, central)
            guard central.preparedWrites.count < configuration.preparedWriteQueueLimit else {
                throw ATTFailure(handle, .prepareQueueFull)
            }
            central.preparedWrites.append(PreparedWrite(handle: handle, offset: Int(offset), value: value))
            return .prepareWriteResponse(handle: handle, offset: offset, value: value)
        case .executeWriteRequest(let commit):
            let queued = central.preparedWrites
            central.preparedWrites.removeAll()
            if commit { try execute(queued, central) }
            return .executeWriteResponse
        default:
            // `isRequest` covers exactly the cases above.
            throw ATTFailure(0, .requestNotSupported)
        }
    }

    private func existing(_ handle: UInt16) throws(ATTFailure) -> Attribute {
        guard let attribute = database.attribute(at: handle) else { throw ATTFailure(handle, .invalidHandle) }
        return attribute
    }

    /// Range check shared by the discovery requests (Vol 3 Part F 3.4.3.1 and friends).
    private func validate(_ range: ATTHandleRange) throws(ATTFailure) {
        guard range.start != 0, range.start <= range.end else { throw ATTFailure(range.start, .invalidHandle) }
    }

    /// Attributes with handles in `range`, in order.
    private func attributes(in range: ATTHandleRange) -> ArraySlice<Attribute> {
        let all = database.attributes
        let first = database.lowerBound(range.start)
        var last = first
        while last < all.count, all[last].handle <= range.end { last += 1 }
        return all[first..<last]
    }

    private func findInformation(_ range: ATTHandleRange, _ central: CentralState) throws(ATTFailure) -> ATTPDU {
        try validate(range)
        var entries: [ATTHandleUUID] = []
        var is16Bit = true
        var space = Int(central.mtu) - 2
        for attribute in attributes(in: range) {
            let short = attribute.type.uint16Value != nil
            if entries.isEmpty { is16Bit = short } else if short != is16Bit { break }
            let size = 2 + (short ? 2 : 16)
            guard size <= space else { break }
            space -= size
            entries.append(ATTHandleUUID(handle: attribute.handle, type: attribute.type))
        }
        guard !entries.isEmpty else { throw ATTFailure(range.start, .attributeNotFound) }
        return .findInformationResponse(entries)
    }

    private func findByTypeValue(
        _ range: ATTHandleRange, type: UInt16, value: [UInt8],
        _ central: CentralState
    ) throws(ATTFailure) -> ATTPDU {
        try validate(range)
        let uuid = BluetoothUUID(type)
        var found: [ATTHandleRange] = []
        let capacity = (Int(central.mtu) - 1) / 4
        // Only fixed values are compared: dynamic values are the program's and are not matched.
        for attribute in attributes(in: range) where attribute.type == uuid {
            guard case .fixed(let bytes) = attribute.value, bytes == value else { continue }
            found.append(ATTHandleRange(start: attribute.handle, end: attribute.groupEnd))
            if found.count == capacity { break }
        }
        guard !found.isEmpty else { throw ATTFailure(range.start, .attributeNotFound) }
        return .findByTypeValueResponse(found)
    }

    private func readByType(_ range: ATTHandleRange, type: BluetoothUUID, _ central: CentralState) throws(ATTFailure) -> ATTPDU {
        try validate(range)
        let maximumLength = min(Int(central.mtu) - 4, 253)
        var entries: [ATTHandleValue] = []
        var space = Int(central.mtu) - 2
        for attribute in attributes(in: range) where attribute.type == type {
            let value: [UInt8]
            if entries.isEmpty {
                // The first match's failure is the answer (Vol 3 Part F 3.4.4.1).
                value = Array(try read(attribute, offset: 0, central).prefix(maximumLength))
            } else {
                // A later failure or a different length ends the list.
                guard let later = try? read(attribute, offset: 0, central) else { break }
                value = Array(later.prefix(maximumLength))
                guard value.count == entries[0].value.count else { break }
            }
            guard 2 + value.count <= space else { break }
            space -= 2 + value.count
            entries.append(ATTHandleValue(handle: attribute.handle, value: value))
        }
        guard !entries.isEmpty else { throw ATTFailure(range.start, .attributeNotFound) }
        return .readByTypeResponse(entries)
    }

    private func readBlob(_ handle: UInt16, offset: Int, _ central: CentralState) throws(ATTFailure) -> ATTPDU {
        let attribute = try existing(handle)
        let value = try read(attribute, offset: offset, central)
        guard offset <= value.count else { throw ATTFailure(handle, .invalidOffset) }
        // Attribute Not Long is allowed only for a value of fixed length that fits one Read
        // Response (Vol 3 Part F 3.4.4.5). A value the program serves may be of any length on
        // the next read, so its part is sent even when it is empty, as for an offset equal to
        // the length (3.4.4.6): a client that read exactly ATT_MTU-1 octets asks for the rest.
        if offset > 0, value.count <= Int(central.mtu) - 1, attribute.value.hasFixedLength {
            throw ATTFailure(handle, .attributeNotLong)
        }
        return .readBlobResponse(Array(value[offset...].prefix(Int(central.mtu) - 1)))
    }

    private func readMultipleVariable(_ handles: [UInt16], _ central: CentralState) throws(ATTFailure) -> ATTPDU {
        var tuples: [ATTLengthValue] = []
        var space = Int(central.mtu) - 1
        for handle in handles {
            let value = try read(try existing(handle), offset: 0, central)
            guard space > 2 else { continue }
            let part = Array(value.prefix(space - 2))
            space -= 2 + part.count
            tuples.append(ATTLengthValue(length: UInt16(value.count), value: part))
        }
        return .readMultipleVariableResponse(tuples)
    }

    private func readByGroupType(_ range: ATTHandleRange, type: BluetoothUUID, _ central: CentralState) throws(ATTFailure) -> ATTPDU {
        try validate(range)
        guard type == .primaryService || type == .secondaryService else {
            throw ATTFailure(range.start, .unsupportedGroupType)
        }
        let maximumLength = min(Int(central.mtu) - 6, 251)
        var groups: [ATTGroupValue] = []
        var space = Int(central.mtu) - 2
        for attribute in attributes(in: range) where attribute.type == type {
            guard case .fixed(let bytes) = attribute.value else { continue }
            let value = Array(bytes.prefix(maximumLength))
            guard groups.isEmpty || value.count == groups[0].value.count, 4 + value.count <= space else { break }
            space -= 4 + value.count
            groups.append(ATTGroupValue(handle: attribute.handle, endGroupHandle: attribute.groupEnd, value: value))
        }
        guard !groups.isEmpty else { throw ATTFailure(range.start, .attributeNotFound) }
        return .readByGroupTypeResponse(groups)
    }

    // MARK: Values and permissions

    /// An attribute's whole value for this central, after the read permission check.
    private func read(_ attribute: Attribute, offset: Int, _ central: CentralState) throws(ATTFailure) -> [UInt8] {
        if let code = permissionError(attribute.permissions, reading: true, central.security) {
            throw ATTFailure(attribute.handle, code)
        }
        switch attribute.value {
        case .fixed(let bytes):
            return bytes
        case .dynamic(let characteristic):
            let request = GATTReadRequest(central: central.id, characteristic: characteristic, offset: offset)
            switch handlers.read(request) {
            case .success(let bytes): return Array(bytes.prefix(AttributeDatabase.maximumValueLength))
            case .failure(let code): throw ATTFailure(attribute.handle, code)
            }
        case .dynamicDescriptor(let descriptor):
            let request = GATTReadRequest(
                central: central.id, characteristic: descriptor.characteristic,
                offset: offset, descriptor: descriptor)
            switch handlers.read(request) {
            case .success(let bytes): return Array(bytes.prefix(AttributeDatabase.maximumValueLength))
            case .failure(let code): throw ATTFailure(attribute.handle, code)
            }
        case .clientConfiguration:
            let bits = central.clientConfigurations[attribute.handle, default: 0]
            return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
        case .clientSupportedFeatures:
            return [central.clientSupportedFeatures]
        case .databaseHash:
            return database.databaseHash()
        }
    }

    /// The ATT error a permission check fails with, if any (Vol 3 Part C 10.3, Part F 4).
    ///
    /// On a link without encryption an attribute requiring authentication answers Insufficient
    /// Authentication and one requiring only encryption answers Insufficient Encryption: both make
    /// a central start pairing or encryption.
    ///
    /// `bonded` follows Vol 3 Part C 10.3.2: a central without a key (no bond stored for it)
    /// gets Insufficient Authentication, which makes it pair; a bonded central that has not
    /// encrypted yet gets Insufficient Encryption, which makes it encrypt with its stored key.
    /// On a link already encrypted with a key that is not bonded, Insufficient Encryption would
    /// only make the central re-encrypt with that same key: Insufficient Authentication says the
    /// key is not good enough, so the central pairs again (with bonding).
    func permissionError(_ permissions: GATTPermissions, reading: Bool, _ security: LinkSecurity) -> ATTErrorCode? {
        let any = reading ? GATTPermissions.anyRead : GATTPermissions.anyWrite
        let encryption: GATTPermissions = reading ? .readEncryptionRequired : .writeEncryptionRequired
        let authentication: GATTPermissions = reading ? .readAuthenticationRequired : .writeAuthenticationRequired
        let authorization: GATTPermissions = reading ? .readAuthorizationRequired : .writeAuthorizationRequired
        let bonding: GATTPermissions = reading ? .readBondingRequired : .writeBondingRequired
        guard !permissions.isDisjoint(with: any) else { return reading ? .readNotPermitted : .writeNotPermitted }
        let needsAuthentication = permissions.contains(authentication)
        let needsBond = permissions.contains(bonding)
        if needsAuthentication || needsBond || permissions.contains(encryption) {
            guard security.isEncrypted else {
                if needsBond { return security.bondExists ? .insufficientEncryption : .insufficientAuthentication }
                return needsAuthentication ? .insufficientAuthentication : .insufficientEncryption
            }
            guard security.encryptionKeySize >= configuration.minimumEncryptionKeySize else {
                return .insufficientEncryptionKeySize
            }
        }
        if needsAuthentication, !security.isAuthenticated { return .insufficientAuthentication }
        if needsBond, !security.isBonded { return .insufficientAuthentication }
        if permissions.contains(authorization), !security.isAuthorized { return .insufficientAuthorization }
        return nil
    }

    private func checkWrite(_ attribute: Attribute, kind: AttributeWrites, _ central: CentralState) throws(ATTFailure) {
        guard attribute.writes.contains(kind) else { throw ATTFailure(attribute.handle, .writeNotPermitted) }
        if let code = permissionError(attribute.permissions, reading: false, central.security) {
            throw ATTFailure(attribute.handle, code)
        }
    }

    /// Checks one write of a whole value (or, for dynamic values, of a part at `offset`).
    private func validateWrite(
        _ handle: UInt16, offset: Int, value: [UInt8], kind: GATTWriteKind,
        _ central: CentralState
    ) throws(ATTFailure) -> PendingWrite {
        let attribute = try existing(handle)
        // Prepared writes need what a Write Request needs (the Write property).
        try checkWrite(attribute, kind: kind == .command ? .command : .request, central)
        guard offset <= AttributeDatabase.maximumValueLength else { throw ATTFailure(handle, .invalidOffset) }
        guard offset + value.count <= AttributeDatabase.maximumValueLength else {
            throw ATTFailure(handle, .invalidAttributeValueLength)
        }
        switch attribute.value {
        case .dynamic(let characteristic):
            return .dynamic(
                GATTWriteRequest(
                    central: central.id, characteristic: characteristic,
                    offset: offset, value: value, kind: kind))
        case .dynamicDescriptor(let descriptor):
            return .dynamic(
                GATTWriteRequest(
                    central: central.id, characteristic: descriptor.characteristic,
                    offset: offset, value: value, kind: kind, descriptor: descriptor))
        case .clientConfiguration(let characteristic):
            guard offset == 0 else { throw ATTFailure(handle, .invalidOffset) }
            guard value.count == 2 else { throw ATTFailure(handle, .invalidAttributeValueLength) }
            let bits = UInt16(value[0]) | UInt16(value[1]) << 8
            var allowed: UInt16 = 0
            if characteristic.properties.contains(.notify) { allowed |= 0x0001 }
            if characteristic.properties.contains(.indicate) { allowed |= 0x0002 }
            guard bits & ~allowed == 0 else { throw ATTFailure(handle, .cccdImproperlyConfigured) }
            return .clientConfiguration(characteristic, handle: handle, bits: bits)
        case .clientSupportedFeatures:
            guard offset == 0 else { throw ATTFailure(handle, .invalidOffset) }
            guard let first = value.first else { throw ATTFailure(handle, .invalidAttributeValueLength) }
            let features = first & ClientFeatures.all
            // A client may not clear a feature it enabled (Vol 3 Part G 7.2).
            guard central.clientSupportedFeatures & ~features == 0 else { throw ATTFailure(handle, .valueNotAllowed) }
            return .clientSupportedFeatures(features)
        case .fixed, .databaseHash:
            throw ATTFailure(handle, .writeNotPermitted)
        }
    }

    /// Applies a validated batch: the program's writes first (all or nothing, one answer), then
    /// the server's own attributes, so a refused batch changes nothing.
    private func commit(_ writes: [PendingWrite], _ central: CentralState) throws(ATTFailure) {
        let dynamic = writes.compactMap { write -> GATTWriteRequest? in
            if case .dynamic(let request) = write { return request } else { return nil }
        }
        if let first = dynamic.first {
            if let code = handlers.write(dynamic) { throw ATTFailure(first.handle, code) }
            appliedWrites = true
        }
        for write in writes {
            switch write {
            case .clientConfiguration(let characteristic, let handle, let bits):
                let old = central.clientConfigurations[handle, default: 0]
                central.clientConfigurations[handle] = bits == 0 ? nil : bits
                if old == 0, bits != 0 { emit(.subscribed(central.id, characteristic)) }
                if old != 0, bits == 0 { emit(.unsubscribed(central.id, characteristic)) }
            case .clientSupportedFeatures(let features):
                central.clientSupportedFeatures = features
            case .dynamic:
                break
            }
        }
    }

    /// Execute Write (commit): validates every prepared value, then applies all or none.
    private func execute(_ queued: [PreparedWrite], _ central: CentralState) throws(ATTFailure) {
        // A value prepared to an attribute removed since cannot be written (Vol 3 Part F 3.4.6.3:
        // an error names the queued handle that failed), even if a later service took its handle.
        if let removed = queued.first(where: \.attributeRemoved) { throw ATTFailure(removed.handle, .invalidHandle) }
        // Join contiguous parts per handle, keeping the order in which handles first appeared.
        var order: [UInt16] = []
        var parts: [UInt16: [PreparedWrite]] = [:]
        for write in queued {
            if parts[write.handle] == nil { order.append(write.handle) }
            if var last = parts[write.handle]?.last, last.offset + last.value.count == write.offset {
                last = PreparedWrite(handle: write.handle, offset: last.offset, value: last.value + write.value)
                parts[write.handle]![parts[write.handle]!.count - 1] = last
            } else {
                parts[write.handle, default: []].append(write)
            }
        }
        var writes: [PendingWrite] = []
        for handle in order {
            for part in parts[handle]! {
                writes.append(try validateWrite(handle, offset: part.offset, value: part.value, kind: .prepared, central))
            }
        }
        try commit(writes, central)
    }
}
