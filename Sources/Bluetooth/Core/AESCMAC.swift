import Crypto
import CryptoExtras

/// AES-128 and AES-CMAC (RFC 4493), the primitives behind the GATT Database Hash
/// (Core Vol 3 Part G 7.3) and the SMP toolbox functions (Vol 3 Part H 2.2).
///
/// Inputs and outputs are in the RFC's byte order (most significant byte first); callers that
/// hold little-endian Bluetooth fields reverse them at their own edge.
public enum AESCMAC {
    public enum Error: Swift.Error, Equatable {
        case keyMustBe16Bytes(Int)
    }

    /// AES-128 of one 16-byte block (the Bluetooth `e` function, Vol 3 Part H 2.2.1).
    public static func encryptBlock(_ block: [UInt8], key: [UInt8]) throws -> [UInt8] {
        guard key.count == 16 else { throw Error.keyMustBe16Bytes(key.count) }
        precondition(block.count == 16, "AES works on 16-byte blocks")
        var output = block
        try AES.permute(&output, key: SymmetricKey(data: key))
        return output
    }

    /// AES-CMAC of `message` under a 128-bit key: a 16-byte tag.
    public static func mac(_ message: [UInt8], key: [UInt8]) throws -> [UInt8] {
        let zero = [UInt8](repeating: 0, count: 16)
        let l = try encryptBlock(zero, key: key)
        let k1 = doubled(l)
        let k2 = doubled(k1)

        let blockCount = max(1, (message.count + 15) / 16)
        let lastIsComplete = !message.isEmpty && message.count % 16 == 0
        var last = [UInt8](message[((blockCount - 1) * 16)...])
        if lastIsComplete {
            last = xor(last, k1)
        } else {
            last.append(0x80)
            last += [UInt8](repeating: 0, count: 16 - last.count)
            last = xor(last, k2)
        }

        var state = zero
        for index in 0..<(blockCount - 1) {
            let block = Array(message[(index * 16)..<(index * 16 + 16)])
            state = try encryptBlock(xor(state, block), key: key)
        }
        return try encryptBlock(xor(state, last), key: key)
    }

    /// Multiplication by x in GF(2^128), the RFC's subkey step.
    private static func doubled(_ block: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 16)
        var carry: UInt8 = 0
        for index in stride(from: 15, through: 0, by: -1) {
            output[index] = block[index] << 1 | carry
            carry = block[index] >> 7
        }
        if carry == 1 { output[15] ^= 0x87 }
        return output
    }

    private static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        zip(a, b).map { $0 ^ $1 }
    }
}
