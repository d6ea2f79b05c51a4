import Crypto
import Foundation
import GRDB
import HearthAuth
import HearthCore
import HearthSQLite
import HearthTokenVerifier
import _CryptoExtras

/// The auth phases of `hearth bench`, in process (no HTTP), each next to a same-run baseline:
/// - `auth-verify`: one RS256 signature check alone vs `TokenService.verifyIDToken` vs
///   `HearthTokenVerifier.TokenVerifier.verify` with a warm key cache;
/// - `auth-signin`: one scrypt derivation with Hearth's native parameters vs `AuthEngine.signInWithPassword`;
/// - `auth-refresh`: a raw GRDB point select + update transaction and one RS256 signature vs
///   `AuthEngine.refresh` (which does both);
/// - `auth-signup`: (scrypt baseline above) vs `AuthEngine.signUp` with email and password.
/// Persistence is real: a `GRDBAuthStore` on a `DatabasePool` with synchronous=FULL under the bench's data dir.
struct AuthBench {
    static let phases: Set<String> = ["auth-verify", "auth-signin", "auth-refresh", "auth-signup"]
    let directory: String
    let clients: Int
    let duration: Double

    /// CPU-bound phases run one loop per core, so latencies are not queueing time.
    var cpuClients: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    func progress(_ text: String) { FileHandle.standardError.write(Data("  \(text)\n".utf8)) }

    func run(_ selected: Set<String>) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let pool = try DatabasePool(path: directory + "/auth.sqlite", configuration: config)
        let store = try GRDBAuthStore(writer: pool)
        let keyRing = try KeyRing(directory: URL(fileURLWithPath: directory + "/keys"))
        let tokens = TokenService(projectID: "demo-hearth", keyRing: keyRing)
        let engine = AuthEngine(store: store, tokens: tokens)
        let params = engine.configuration.passwordHashing

        if selected.contains("auth-verify") {
            let session = try await engine.signUp(email: nil, password: nil)
            let token = session.idToken
            let parts = token.split(separator: ".")
            let input = Array("\(parts[0]).\(parts[1])".utf8)
            let signature = _RSA.Signing.RSASignature(rawRepresentation: Self.base64URL(String(parts[2])))
            let key = try keyRing.activeKey().publicKey
            guard key.isValidSignature(signature, for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5) else {
                throw HearthError(.internal, "The benchmark token does not verify.")
            }
            print(try await measure("baseline: RS256 signature check alone", clients: cpuClients) { _ in
                _ = key.isValidSignature(signature, for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
            })
            // First presentations (every signature checked) and repeated ones (the token was
            // verified before, as on every request of a signed-in client within the hour).
            let uncached = TokenService(projectID: "demo-hearth", keyRing: keyRing, verifiedTokenCacheSize: 0)
            print(try await measure("hearth: TokenService.verifyIDToken, new token", clients: cpuClients) { _ in
                _ = try uncached.verifyIDToken(token)
            })
            print(try await measure("hearth: TokenService.verifyIDToken, repeated", clients: cpuClients) { _ in
                _ = try tokens.verifyIDToken(token)
            })
            let coldVerifier = TokenVerifier(
                configuration: .init(projectID: "demo-hearth", verifiedTokenCacheSize: 0), source: KeyRingSource(keyRing: keyRing))
            try await coldVerifier.refreshKeys()
            print(try await measure("hearth: TokenVerifier.verify, new token", clients: cpuClients) { _ in
                _ = try await coldVerifier.verify(token)
            })
            let verifier = TokenVerifier(configuration: .init(projectID: "demo-hearth"), source: KeyRingSource(keyRing: keyRing))
            try await verifier.refreshKeys()
            print(try await measure("hearth: TokenVerifier.verify, repeated", clients: cpuClients) { _ in
                _ = try await verifier.verify(token)
            })
        }
        if selected.contains("auth-signin") || selected.contains("auth-signup") {
            print(try await measure("baseline: scrypt N=2^\(params.logN) r=\(params.r) p=\(params.p) alone", clients: cpuClients) { i in
                _ = try Scrypt.derive(password: Array("password-\(i)".utf8), salt: Array("saltsaltsaltsalt".utf8), n: 1 << params.logN, r: params.r, p: params.p, length: params.hashLength)
            })
        }
        if selected.contains("auth-signin") {
            let users = 32
            progress("creating \(users) password users…")
            for u in 0..<users {
                _ = try? await engine.signUp(email: "signin\(u)@bench.test", password: "correct horse \(u)")
            }
            print(try await measure("hearth: AuthEngine.signInWithPassword", clients: cpuClients) { i in
                let u = abs(i) % users
                _ = try await engine.signInWithPassword(email: "signin\(u)@bench.test", password: "correct horse \(u)")
            })
        }
        if selected.contains("auth-signup") {
            let run = UUID().uuidString.prefix(8)
            print(try await measure("hearth: AuthEngine.signUp (email, password)", clients: cpuClients) { i in
                _ = try await engine.signUp(email: "new\(i)-\(run)@bench.test", password: "correct horse")
            })
        }
        if selected.contains("auth-refresh") {
            let sessions = 256
            progress("creating \(sessions) anonymous sessions…")
            var refreshTokens: [String] = []
            for _ in 0..<sessions { refreshTokens.append(try await engine.signUp(email: nil, password: nil).refreshToken) }
            try await pool.write { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS bench_kv(k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
                for k in 0..<sessions { try db.execute(sql: "INSERT OR REPLACE INTO bench_kv(k, v) VALUES (?, 0)", arguments: [k]) }
            }
            print(try await measure("baseline: GRDB point select + update", clients: clients) { i in
                let k = abs(i) % sessions
                try await pool.write { db in
                    let v = try Int.fetchOne(db, sql: "SELECT v FROM bench_kv WHERE k = ?", arguments: [k]) ?? 0
                    try db.execute(sql: "UPDATE bench_kv SET v = ? WHERE k = ?", arguments: [v + 1, k])
                }
            })
            let signingKey = try keyRing.activeKey().privateKey
            let claims = Array(#"{"iss":"https://securetoken.google.com/demo-hearth","aud":"demo-hearth","sub":"bench"}"#.utf8)
            print(try await measure("baseline: RS256 signature (sign) alone", clients: cpuClients) { _ in
                _ = try signingKey.signature(for: SHA256.hash(data: claims), padding: .insecurePKCS1v1_5)
            })
            let list = refreshTokens
            print(try await measure("hearth: AuthEngine.refresh", clients: clients) { i in
                _ = try await engine.refresh(list[abs(i) % list.count])
            })
        }
    }

    func measure(_ name: String, clients: Int, _ op: @escaping @Sendable (Int) async throws -> Void) async throws -> Measurement {
        progress("measuring \(name.trimmingCharacters(in: .whitespaces)) (\(clients) loops, \(duration) s)…")
        return try await GRDBBaseline.measure(name, clients: clients, duration: duration, op)
    }

    static func base64URL(_ text: String) -> [UInt8] {
        var t = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.utf8.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map(Array.init) ?? []
    }
}

/// The key ring's JWKS as a verifier key source (what a fetch of the auth port's JWKS returns).
struct KeyRingSource: PublicKeySource {
    let keyRing: KeyRing
    func fetchKeys() async throws(TokenVerificationError) -> PublicKeySet {
        try PublicKeySet.parse(keyRing.jwks().serializedBytes(), maxAge: keyRing.cacheMaxAge)
    }
}
