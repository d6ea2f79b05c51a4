public import HearthCore
import Crypto
import _CryptoExtras
import Foundation

/// Firebase's modified scrypt parameters (a project's "password hash parameters").
public struct FirebaseScryptParameters: Sendable, Hashable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]
    public var rounds: Int
    public var memoryCost: Int

    public init(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int) {
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memoryCost = memoryCost
    }

    /// From the base64 strings the Firebase console shows.
    public init(base64SignerKey: String, base64SaltSeparator: String, rounds: Int, memoryCost: Int) throws(HearthError) {
        guard let key = Base64.decode(base64SignerKey), let sep = Base64.decode(base64SaltSeparator) else {
            throw AuthErrorCode.invalidHashAlgorithm.error("signerKey and saltSeparator must be base64")
        }
        self.init(signerKey: key, saltSeparator: sep, rounds: rounds, memoryCost: memoryCost)
    }
}

/// Which of password and salt an imported HMAC/plain hash fed first (`--hash-input-order`).
public enum HashInputOrder: String, Sendable, Hashable {
    case passwordFirst = "PASSWORD_FIRST"
    case saltFirst = "SALT_FIRST"
}

/// A stored password hash with everything needed to verify it. Hearth hashes new passwords
/// with standard scrypt and a per-user salt; imported hashes keep their own algorithm until
/// the next successful sign-in, when the engine re-hashes them.
public enum PasswordHash: Sendable, Hashable {
    /// Standard scrypt (RFC 7914): N = 2^logN.
    case scrypt(logN: Int, r: Int, p: Int, salt: [UInt8], hash: [UInt8])
    /// Firebase's modified scrypt (`SCRYPT` in imports and exports).
    case firebaseScrypt(FirebaseScryptParameters, salt: [UInt8], hash: [UInt8])
    /// PBKDF2-HMAC-SHA256 with `rounds` iterations.
    case pbkdf2SHA256(rounds: Int, salt: [UInt8], hash: [UInt8])
    /// HMAC-SHA256 keyed with the import's key over password and salt.
    case hmacSHA256(key: [UInt8], order: HashInputOrder, salt: [UInt8], hash: [UInt8])
    /// bcrypt in its modular crypt format (`$2a$`/`$2b$`/`$2y$`; cost and salt inside).
    case bcrypt(String)

    /// The name Firebase uses for the algorithm.
    public var algorithmName: String {
        switch self {
        case .scrypt: "STANDARD_SCRYPT"
        case .firebaseScrypt: "SCRYPT"
        case .pbkdf2SHA256: "PBKDF2_SHA256"
        case .hmacSHA256: "HMAC_SHA256"
        case .bcrypt: "BCRYPT"
        }
    }

    public var salt: [UInt8] {
        switch self {
        case .scrypt(_, _, _, let s, _), .firebaseScrypt(_, let s, _), .pbkdf2SHA256(_, let s, _), .hmacSHA256(_, _, let s, _): s
        case .bcrypt(let text): BCrypt.parse(text)?.salt ?? []
        }
    }

    public var hash: [UInt8] {
        switch self {
        case .scrypt(_, _, _, _, let h), .firebaseScrypt(_, _, let h), .pbkdf2SHA256(_, _, let h), .hmacSHA256(_, _, _, let h): h
        case .bcrypt(let text): Array(text.utf8)
        }
    }

    /// Whether this hash is in Hearth's current native scheme (else it is upgraded on sign-in).
    public func isNative(_ params: ScryptParameters) -> Bool {
        if case .scrypt(let logN, let r, let p, _, _) = self { return logN == params.logN && r == params.r && p == params.p }
        return false
    }

    /// The most work one verification may cost. Imports outside these bounds are refused, and a
    /// stored hash outside them is never computed, so no account can pin a core at sign-in.
    public enum Limits {
        /// bcrypt: 2^cost rounds; 14 takes about a second here, 31 would take days.
        public static let bcryptCost = 4...14
        /// Standard scrypt: N = 2^logN; memory 128·r·N ≤ 256 MiB; work N·r·p ≤ 2^22 (16 × Hearth's own).
        public static let scryptLogN = 1...20
        public static let scryptR = 1...32
        public static let scryptP = 1...16
        public static let scryptMaxMemory = 256 * 1024 * 1024
        public static let scryptMaxWork = 1 << 22
        /// Firebase's modified scrypt, as the Firebase console allows it.
        public static let firebaseScryptRounds = 1...8
        public static let firebaseScryptMemoryCost = 1...14
        /// PBKDF2-HMAC-SHA256 iterations (Firebase's import bound).
        public static let pbkdf2Rounds = 1...120_000
        /// Derived-key length for scrypt and PBKDF2 (PBKDF2's work grows with it).
        public static let derivedKeyLength = 1...64
    }

    /// Checks this hash's parameters against ``Limits``: INVALID_PASSWORD_HASH otherwise.
    public func checkCost() throws(HearthError) {
        let bad = AuthErrorCode.invalidPasswordHash
        switch self {
        case .scrypt(let logN, let r, let p, _, let hash):
            guard Limits.scryptLogN.contains(logN), Limits.scryptR.contains(r), Limits.scryptP.contains(p),
                Limits.derivedKeyLength.contains(hash.count)
            else { throw bad.error("STANDARD_SCRYPT needs cpuMemCost 2^1…2^20, blockSize 1…32, parallelization 1…16.") }
            let n = 1 << logN
            guard 128 * r * n <= Limits.scryptMaxMemory, n * r * p <= Limits.scryptMaxWork else {
                throw bad.error("STANDARD_SCRYPT parameters need more than 256 MiB or 2^22 block operations.")
            }
        case .firebaseScrypt(let params, _, _):
            guard Limits.firebaseScryptRounds.contains(params.rounds), Limits.firebaseScryptMemoryCost.contains(params.memoryCost) else {
                throw bad.error("SCRYPT needs rounds 1…8 and memoryCost 1…14.")
            }
        case .pbkdf2SHA256(let rounds, _, let hash):
            guard Limits.pbkdf2Rounds.contains(rounds), Limits.derivedKeyLength.contains(hash.count) else {
                throw bad.error("PBKDF2_SHA256 needs rounds 1…120000 and a hash of 1…64 bytes.")
            }
        case .hmacSHA256(let key, _, _, let hash):
            guard !key.isEmpty, hash.count == 32 else { throw bad.error("HMAC_SHA256 needs a signerKey and a 32-byte hash.") }
        case .bcrypt(let text):
            guard let parsed = BCrypt.parse(text) else { throw bad.error("Not a $2a$/$2b$/$2y$ bcrypt hash.") }
            guard Limits.bcryptCost.contains(parsed.cost) else {
                throw bad.error("BCRYPT cost must be \(Limits.bcryptCost.lowerBound)…\(Limits.bcryptCost.upperBound).")
            }
        }
    }

    /// Checks `password` against this hash in constant time over the hash bytes. A hash over
    /// ``Limits`` is refused (INVALID_PASSWORD_HASH) without being computed.
    public func verify(_ password: String) throws(HearthError) -> Bool {
        try checkCost()
        let pw = Array(password.utf8)
        let computed: [UInt8]
        switch self {
        case .scrypt(let logN, let r, let p, let salt, let hash):
            computed = try Scrypt.derive(password: pw, salt: salt, n: 1 << logN, r: r, p: p, length: hash.count)
        case .firebaseScrypt(let params, let salt, let hash):
            computed = try Self.firebaseScrypt(password: pw, salt: salt, params)
            return Self.constantTimeEqual(computed, hash)
        case .pbkdf2SHA256(let rounds, let salt, let hash):
            computed = PBKDF2.derive(SHA256.self, password: pw, salt: salt, iterations: rounds, length: hash.count)
        case .hmacSHA256(let key, let order, let salt, _):
            let message = order == .passwordFirst ? pw + salt : salt + pw
            computed = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        case .bcrypt(let text):
            return BCrypt.verify(password, hash: text)
        }
        return Self.constantTimeEqual(computed, hash)
    }

    /// Firebase's modified scrypt: the scrypt key of password and salt + separator
    /// encrypts the signer key with AES-256-CTR (zero IV); the ciphertext is the hash.
    public static func firebaseScrypt(password: [UInt8], salt: [UInt8], _ params: FirebaseScryptParameters) throws(HearthError) -> [UInt8] {
        guard params.memoryCost >= 1, params.memoryCost <= 20, params.rounds >= 1, params.rounds <= 16 else {
            throw AuthErrorCode.invalidPasswordHash.error("rounds must be 1…8 and memoryCost 1…14")
        }
        let key = try Scrypt.derive(
            password: password, salt: salt + params.saltSeparator, n: 1 << params.memoryCost, r: params.rounds, p: 1, length: 32)
        do {
            let nonce = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
            return Array(try AES._CTR.encrypt(params.signerKey, using: SymmetricKey(data: key), nonce: nonce))
        } catch {
            throw HearthError(.internal, "AES-CTR failed.", cause: error)
        }
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

/// Hearth's native password scheme: standard scrypt with a random per-user salt.
public struct ScryptParameters: Sendable, Hashable {
    public var logN: Int
    public var r: Int
    public var p: Int
    public var saltLength: Int
    public var hashLength: Int

    public init(logN: Int, r: Int, p: Int, saltLength: Int = 16, hashLength: Int = 32) {
        self.logN = logN
        self.r = r
        self.p = p
        self.saltLength = saltLength
        self.hashLength = hashLength
    }

    /// N = 2^15, r = 8, p = 1 (32 MiB, OWASP's recommendation for scrypt).
    public static let strong = ScryptParameters(logN: 15, r: 8, p: 1)
    /// Cheap parameters for tests only.
    public static let testing = ScryptParameters(logN: 4, r: 1, p: 1)

    /// Hashes `password` with a fresh random salt.
    public func hash(_ password: String) throws(HearthError) -> PasswordHash {
        var rng = SystemRandomNumberGenerator()
        let salt = (0..<saltLength).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
        let h = try Scrypt.derive(password: Array(password.utf8), salt: salt, n: 1 << logN, r: r, p: p, length: hashLength)
        return .scrypt(logN: logN, r: r, p: p, salt: salt, hash: h)
    }
}
