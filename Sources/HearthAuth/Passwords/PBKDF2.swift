public import Crypto

/// PBKDF2 (RFC 8018) over swift-crypto's HMAC, for any of its hash functions.
public enum PBKDF2 {
    /// Derives `length` bytes from `password` and `salt` with `iterations` rounds of HMAC-`H`.
    public static func derive<H: HashFunction>(
        _ hash: H.Type, password: some Collection<UInt8>, salt: some Collection<UInt8>, iterations: Int, length: Int
    ) -> [UInt8] {
        precondition(iterations >= 1 && length >= 0)
        let key = SymmetricKey(data: Array(password))
        let saltBytes = Array(salt)
        var out: [UInt8] = []
        out.reserveCapacity(length)
        var block: UInt32 = 1
        while out.count < length {
            var mac = HMAC<H>(key: key)
            mac.update(data: saltBytes)
            mac.update(data: [UInt8(block >> 24), UInt8(truncatingIfNeeded: block >> 16), UInt8(truncatingIfNeeded: block >> 8), UInt8(truncatingIfNeeded: block)])
            var u = Array(mac.finalize())
            var t = u
            if iterations > 1 {
                for _ in 1..<iterations {
                    u = Array(HMAC<H>.authenticationCode(for: u, using: key))
                    for i in t.indices { t[i] ^= u[i] }
                }
            }
            out.append(contentsOf: t.prefix(length - out.count))
            block &+= 1
        }
        return out
    }
}
