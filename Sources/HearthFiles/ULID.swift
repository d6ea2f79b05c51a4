public import HearthCore

/// A ULID (Universally Unique Lexicographically Sortable Identifier): 48 bits of Unix time in
/// milliseconds and 80 random bits, written as 26 characters of Crockford's base 32. Ids made
/// later sort after ids made earlier (to the millisecond), so a file id also orders files by age.
public struct ULID: Sendable, Hashable, CustomStringConvertible {
    /// The canonical text: 26 upper-case Crockford base-32 characters.
    public let text: String

    static let alphabet: [UInt8] = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The id for a time (milliseconds since the Unix epoch, < 2^48) and 10 random bytes.
    public init(milliseconds: UInt64, randomness: [UInt8]) {
        precondition(randomness.count == 10, "a ULID has 80 random bits")
        var value = UInt128(milliseconds & 0xFFFF_FFFF_FFFF) << 80
        for (index, byte) in randomness.enumerated() { value |= UInt128(byte) << (72 - 8 * index) }
        var characters: [UInt8] = []
        characters.reserveCapacity(26)
        for index in 0..<26 { characters.append(Self.alphabet[Int((value >> (125 - 5 * index)) & 31)]) }
        text = String(decoding: characters, as: UTF8.self)
    }

    /// A new id for now, with fresh random bits from the system's secure generator.
    public static func make(now: Timestamp) -> ULID {
        let milliseconds = UInt64(max(0, now.seconds)) * 1000 + UInt64(max(0, now.nanos)) / 1_000_000
        return ULID(milliseconds: milliseconds, randomness: SecureRandom.bytes(10))
    }

    /// Parses the canonical form; nil for anything else (wrong length, lower case, letters
    /// outside the alphabet, or a first character above `7`, which would overflow 128 bits).
    public init?(parsing text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 26, bytes[0] <= UInt8(ascii: "7") else { return nil }
        for byte in bytes where !Self.alphabet.contains(byte) { return nil }
        self.text = String(decoding: bytes, as: UTF8.self)
    }

    /// The time part, in milliseconds since the Unix epoch.
    public var milliseconds: UInt64 {
        var value: UInt64 = 0
        for byte in text.utf8.prefix(10) {
            value = value << 5 | UInt64(Self.alphabet.firstIndex(of: byte)!)
        }
        return value
    }

    public var description: String { text }
}
