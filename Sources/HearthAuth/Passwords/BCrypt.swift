public import HearthCore

/// bcrypt (Provos and Mazières, 1999): the expensive-key-schedule Blowfish ("eksblowfish")
/// over "OrpheanBeholderScryDoubt", in the modular crypt format `$2b$<cost>$<22 salt><31 hash>`.
/// `$2a$`, `$2b$` and `$2y$` are verified alike: the password's UTF-8 bytes plus a NUL,
/// truncated to 72 bytes (they differ only for passwords longer than 255 bytes).
public enum BCrypt {
    static let alphabet = Array("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
    static let magic = Array("OrpheanBeholderScryDoubt".utf8)

    /// Whether `text` is a bcrypt hash this type can verify.
    public static func isWellFormed(_ text: String) -> Bool { parse(text) != nil }

    static func parse(_ text: String) -> (prefix: String, cost: Int, salt: [UInt8], hash: [UInt8])? {
        let b = Array(text.utf8)
        guard b.count == 60, b[0] == UInt8(ascii: "$"), b[1] == UInt8(ascii: "2"), b[3] == UInt8(ascii: "$"), b[6] == UInt8(ascii: "$"),
            [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "y")].contains(b[2]),
            let cost = Int(String(decoding: b[4..<6], as: UTF8.self)), cost >= 4, cost <= 31,
            let salt = decode(Array(b[7..<29]), count: 16), let hash = decode(Array(b[29..<60]), count: 23)
        else { return nil }
        return (String(decoding: b[0..<3], as: UTF8.self), cost, salt, hash)
    }

    /// Hashes `password` with `salt` (16 bytes) at `cost` (2^cost rounds).
    public static func hash(_ password: String, salt: [UInt8], cost: Int, prefix: String = "$2b") throws(HearthError) -> String {
        guard salt.count == 16, cost >= 4, cost <= 31 else { throw HearthError.invalidArgument("bcrypt needs a 16-byte salt and cost 4…31.") }
        let raw = derive(password: password, salt: salt, cost: cost)
        let c = cost < 10 ? "0\(cost)" : "\(cost)"
        return "\(prefix)$\(c)$" + encode(salt, chars: 22) + encode(Array(raw.prefix(23)), chars: 31)
    }

    /// Checks `password` against a bcrypt hash in constant time over the hash bytes.
    public static func verify(_ password: String, hash text: String) -> Bool {
        guard let p = parse(text) else { return false }
        let raw = Array(derive(password: password, salt: p.salt, cost: p.cost).prefix(23))
        var diff: UInt8 = 0
        for i in 0..<23 { diff |= raw[i] ^ p.hash[i] }
        return diff == 0
    }

    static func derive(password: String, salt: [UInt8], cost: Int) -> [UInt8] {
        var key = Array(password.utf8) + [0]
        if key.count > 72 { key = Array(key.prefix(72)) }
        var state = Blowfish()
        state.expand(key: key, salt: salt)
        for _ in 0..<(1 << cost) {
            state.expand(key: key, salt: nil)
            state.expand(key: salt, salt: nil)
        }
        var words: [UInt32] = (0..<6).map { i in
            magic[4 * i..<4 * i + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        for _ in 0..<64 {
            for j in stride(from: 0, to: 6, by: 2) {
                (words[j], words[j + 1]) = state.encrypt(words[j], words[j + 1])
            }
        }
        return words.flatMap { w in [UInt8(w >> 24), UInt8(w >> 16 & 0xff), UInt8(w >> 8 & 0xff), UInt8(w & 0xff)] }
    }

    /// bcrypt's base64: its own alphabet, no padding, `chars` characters.
    static func encode(_ bytes: [UInt8], chars: Int) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let b0 = Int(bytes[i]), b1 = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0, b2 = i + 2 < bytes.count ? Int(bytes[i + 2]) : 0
            out += [alphabet[b0 >> 2], alphabet[(b0 & 3) << 4 | b1 >> 4], alphabet[(b1 & 15) << 2 | b2 >> 6], alphabet[b2 & 63]]
            i += 3
        }
        return String(decoding: out.prefix(chars), as: UTF8.self)
    }

    static func decode(_ chars: [UInt8], count: Int) -> [UInt8]? {
        var values: [Int] = []
        for c in chars {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            values.append(v)
        }
        var out: [UInt8] = []
        var i = 0
        while out.count < count {
            let v0 = values[i], v1 = i + 1 < values.count ? values[i + 1] : 0
            let v2 = i + 2 < values.count ? values[i + 2] : 0, v3 = i + 3 < values.count ? values[i + 3] : 0
            out.append(UInt8((v0 << 2 | v1 >> 4) & 0xff))
            if out.count < count { out.append(UInt8((v1 << 4 | v2 >> 2) & 0xff)) }
            if out.count < count { out.append(UInt8((v2 << 6 | v3) & 0xff)) }
            i += 4
        }
        return out
    }
}

/// Blowfish's state with the eksblowfish key expansion; subkeys live in one flat array
/// (P: 0..<18, S-box k: 18 + 256k ..< 18 + 256(k+1)).
struct Blowfish {
    var state: [UInt32]

    init() {
        state = BlowfishTables.p + BlowfishTables.s0 + BlowfishTables.s1 + BlowfishTables.s2 + BlowfishTables.s3
    }

    func encrypt(_ l: UInt32, _ r: UInt32) -> (UInt32, UInt32) {
        state.withUnsafeBufferPointer { s in Self.encrypt(s, l, r) }
    }

    @inline(__always)
    static func encrypt(_ s: UnsafeBufferPointer<UInt32>, _ left: UInt32, _ right: UInt32) -> (UInt32, UInt32) {
        var l = left, r = right
        for i in 0..<16 {
            l ^= s[i]
            let f = ((s[18 + Int(l >> 24)] &+ s[274 + Int(l >> 16 & 0xff)]) ^ s[530 + Int(l >> 8 & 0xff)]) &+ s[786 + Int(l & 0xff)]
            r ^= f
            swap(&l, &r)
        }
        swap(&l, &r)
        return (l ^ s[17], r ^ s[16])
    }

    /// XORs the key into P, then re-encrypts every subkey, mixing in `salt` when given.
    mutating func expand(key: [UInt8], salt: [UInt8]?) {
        var keyPos = 0, saltPos = 0
        func word(_ bytes: [UInt8], _ pos: inout Int) -> UInt32 {
            var w: UInt32 = 0
            for _ in 0..<4 {
                w = w << 8 | UInt32(bytes[pos])
                pos = (pos + 1) % bytes.count
            }
            return w
        }
        for i in 0..<18 { state[i] ^= word(key, &keyPos) }
        var l: UInt32 = 0, r: UInt32 = 0
        state.withUnsafeMutableBufferPointer { s in
            var i = 0
            while i < s.count {
                if let salt {
                    l ^= word(salt, &saltPos)
                    r ^= word(salt, &saltPos)
                }
                (l, r) = Self.encrypt(UnsafeBufferPointer(s), l, r)
                s[i] = l
                s[i + 1] = r
                i += 2
            }
        }
    }
}
