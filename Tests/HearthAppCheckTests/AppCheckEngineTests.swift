import Foundation
import GRDB
import HearthAuth
import HearthCore
import HearthJWT
import HearthSQLite
import Synchronization
import Testing

@testable import HearthAppCheck

/// An App Check engine over an in-memory SQLite store, with a clock the test moves.
final class TestClock: Sendable {
    let seconds = Mutex<Int64>(1_800_000_000)
}

struct AppCheckBed {
    let time = TestClock()
    let engine: AppCheckEngine
    static let app = "1:123456789012:ios:0a1b2c3d"

    init() throws {
        let clock = AuthClock { [time] in time.seconds.withLock { $0 } * 1000 }
        let ring = try KeyRing(directory: nil, policy: .init(keySize: 2048), clock: clock)
        let store = try GRDBAppCheckStore(writer: DatabaseQueue())
        engine = AppCheckEngine(projectID: "demo-hearth", projectNumber: "123456789012", keyRing: ring, store: store, clock: clock)
    }

    func advance(_ delta: Int64) { time.seconds.withLock { $0 += delta } }
}

@Suite struct AppCheckEngineTests {
    @Test func debugTokenExchangeIssuesAVerifiableToken() async throws {
        let bed = try AppCheckBed()
        try await bed.engine.addApp(AppCheckBed.app)
        let secret = try await bed.engine.addDebugToken(appID: AppCheckBed.app, token: nil, name: "ci")
        let issued = try await bed.engine.exchangeDebugToken(appID: AppCheckBed.app, debugToken: secret, limitedUse: false)
        #expect(issued.ttlSeconds == 3600)
        let verified = try await bed.engine.verify(issued.token)
        #expect(verified.appID == AppCheckBed.app)
        let claims = verified.claims
        #expect(claims["iss"] == .string("https://firebaseappcheck.googleapis.com/123456789012"))
        #expect(claims["aud"] == .array([.string("projects/123456789012"), .string("projects/demo-hearth")]))
        let jwt = try #require(JWT.parse(issued.token))
        #expect(jwt.header["typ"] == .string("JWT") && jwt.algorithm == "RS256" && jwt.keyID != nil)
    }

    @Test func unregisteredAppsAndDebugTokensAreRefused() async throws {
        let bed = try AppCheckBed()
        await #expect { try await bed.engine.exchangeDebugToken(appID: AppCheckBed.app, debugToken: "whatever-123", limitedUse: false) } throws: {
            ($0 as? AppCheckError)?.reason == .unknownApp
        }
        try await bed.engine.addApp(AppCheckBed.app)
        await #expect { try await bed.engine.exchangeDebugToken(appID: AppCheckBed.app, debugToken: "not-registered", limitedUse: false) } throws: {
            ($0 as? AppCheckError)?.reason == .debugTokenRejected
        }
        for bad in ["", "2:1:ios:ab", "1:12:windows:ab", "1:12:ios:xyz", "1:12:ios", "1:a:ios:ab"] {
            await #expect { try await bed.engine.addApp(bad) } throws: { ($0 as? AppCheckError)?.reason == .invalidAppID }
        }
    }

    @Test func expiredForeignAndRevokedTokensAreRefused() async throws {
        let bed = try AppCheckBed()
        try await bed.engine.addApp(AppCheckBed.app)
        let token = try bed.engine.mint(appID: AppCheckBed.app, ttl: 600, limitedUse: false).token
        _ = try await bed.engine.verify(token)
        // Tampered payload, placeholder token, garbage.
        let parts = token.split(separator: ".").map(String.init)
        let otherApp = Base64.urlEncode(Array(#"{"sub":"1:1:web:ff","aud":["projects/demo-hearth"]}"#.utf8))
        for bad in [parts[0] + "." + otherApp + "." + parts[2], "eyJlcnJvciI6IlVOS05PV05fRVJST1IifQ==", "a.b.c", ""] {
            await #expect { try await bed.engine.verify(bad) } throws: { ($0 as? AppCheckError)?.reason == .invalidToken }
        }
        // Another project's engine (its own keys) does not accept it either.
        let other = try AppCheckBed()
        try await other.engine.addApp(AppCheckBed.app)
        await #expect { try await other.engine.verify(token) } throws: { ($0 as? AppCheckError)?.reason == .invalidToken }
        // Expiry.
        bed.advance(601)
        await #expect { try await bed.engine.verify(token) } throws: { ($0 as? AppCheckError)?.message.contains("expired") == true }
        // Removing the app revokes its tokens.
        let fresh = try bed.engine.mint(appID: AppCheckBed.app, ttl: 600, limitedUse: false).token
        _ = try await bed.engine.store.removeApp(AppCheckBed.app)
        await #expect { try await bed.engine.verify(fresh) } throws: { ($0 as? AppCheckError)?.reason == .invalidToken }
    }

    @Test func limitedUseTokensAreConsumedOnce() async throws {
        let bed = try AppCheckBed()
        try await bed.engine.addApp(AppCheckBed.app)
        let token = try bed.engine.mint(appID: AppCheckBed.app, ttl: 300, limitedUse: true).token
        #expect(try await bed.engine.consume(token) == false)
        #expect(try await bed.engine.consume(token) == true)
        let other = try bed.engine.mint(appID: AppCheckBed.app, ttl: 300, limitedUse: true).token
        #expect(try await bed.engine.consume(other) == false)
    }
}
