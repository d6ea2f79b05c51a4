import HearthCore

extension PasswordHash {
    /// A self-describing text form for storage: `algorithm$parameters…$salt$hash` (base64 fields).
    public var encoded: String {
        let b = { (x: [UInt8]) in Base64.encode(x) }
        switch self {
        case .scrypt(let logN, let r, let p, let salt, let hash):
            return "scrypt$\(logN)$\(r)$\(p)$\(b(salt))$\(b(hash))"
        case .firebaseScrypt(let f, let salt, let hash):
            return "firebase-scrypt$\(f.rounds)$\(f.memoryCost)$\(b(f.signerKey))$\(b(f.saltSeparator))$\(b(salt))$\(b(hash))"
        case .pbkdf2SHA256(let rounds, let salt, let hash):
            return "pbkdf2-sha256$\(rounds)$\(b(salt))$\(b(hash))"
        case .hmacSHA256(let key, let order, let salt, let hash):
            return "hmac-sha256$\(b(key))$\(order.rawValue)$\(b(salt))$\(b(hash))"
        case .bcrypt(let text):
            return "bcrypt$" + b(Array(text.utf8))
        }
    }

    public init?(encoded: String) {
        let f = encoded.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        func bytes(_ i: Int) -> [UInt8]? { i < f.count ? Base64.decode(f[i]) : nil }
        func int(_ i: Int) -> Int? { i < f.count ? Int(f[i]) : nil }
        switch f.first {
        case "scrypt" where f.count == 6:
            guard let n = int(1), let r = int(2), let p = int(3), let s = bytes(4), let h = bytes(5) else { return nil }
            self = .scrypt(logN: n, r: r, p: p, salt: s, hash: h)
        case "firebase-scrypt" where f.count == 7:
            guard let r = int(1), let m = int(2), let k = bytes(3), let sep = bytes(4), let s = bytes(5), let h = bytes(6) else { return nil }
            self = .firebaseScrypt(FirebaseScryptParameters(signerKey: k, saltSeparator: sep, rounds: r, memoryCost: m), salt: s, hash: h)
        case "pbkdf2-sha256" where f.count == 4:
            guard let r = int(1), let s = bytes(2), let h = bytes(3) else { return nil }
            self = .pbkdf2SHA256(rounds: r, salt: s, hash: h)
        case "hmac-sha256" where f.count == 5:
            guard let k = bytes(1), let o = HashInputOrder(rawValue: f[2]), let s = bytes(3), let h = bytes(4) else { return nil }
            self = .hmacSHA256(key: k, order: o, salt: s, hash: h)
        case "bcrypt" where f.count == 2:
            guard let t = bytes(1), let text = String(validating: t, as: UTF8.self), BCrypt.isWellFormed(text) else { return nil }
            self = .bcrypt(text)
        default:
            return nil
        }
    }
}
