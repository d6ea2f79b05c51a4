public import HearthAppCheck
public import Logging
import Synchronization
import CoreMetrics

/// How a service treats App Check tokens (Firebase's enforcement modes).
public enum AppCheckMode: String, Sendable, CaseIterable {
    /// Tokens are neither checked nor counted (Firebase's `OFF`).
    case off
    /// Tokens are checked and counted, failures logged, every request allowed (`UNENFORCED`).
    case monitor
    /// Requests without a valid token are refused (`ENFORCED`).
    case enforce
}

/// The App Check check of one service: reads the token a request carries, verifies it with
/// the engine, counts the outcome and decides per the service's mode. Each transport renders
/// a refusal in its own protocol's error.
public final class AppCheckGate: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// Let the request through (with the verified app id, if there was a valid token).
        case allow(appID: String?)
        /// Refuse: no token.
        case missing
        /// Refuse: a token that does not verify (including the SDKs' placeholder token).
        case invalid
    }

    public struct Counts: Sendable, Equatable {
        public var verified = 0
        public var missing = 0
        public var invalid = 0
    }

    public let service: String
    public let mode: AppCheckMode
    let engine: AppCheckEngine?
    let counts = Mutex(Counts())
    let logger: Logger
    /// `hearth_app_check_requests_total{service,mode,outcome}` in the metrics registry.
    let counters: (verified: Counter, missing: Counter, invalid: Counter)?

    public init(service: String, mode: AppCheckMode, engine: AppCheckEngine?, logger: Logger) {
        self.service = service
        self.mode = engine == nil ? .off : mode
        self.engine = engine
        self.logger = logger
        let mode = self.mode
        func counter(_ outcome: String) -> Counter {
            Counter(
                label: "hearth_app_check_requests_total",
                dimensions: [("service", service), ("mode", mode.rawValue), ("outcome", outcome)])
        }
        // Created up front so a scrape shows the zeros of an enabled gate.
        counters = mode == .off ? nil : (counter("verified"), counter("missing"), counter("invalid"))
    }

    public var snapshot: Counts { counts.withLock { $0 } }

    /// Judges the token a request carries (nil when it carries none).
    public func check(_ token: String?) async -> Outcome {
        guard mode != .off, let engine else { return .allow(appID: nil) }
        guard let token, !token.isEmpty else {
            counts.withLock { $0.missing += 1 }
            counters?.missing.increment()
            if mode == .monitor { logger.info("request without an App Check token allowed (monitor)", metadata: ["service": "\(service)"]) }
            return mode == .enforce ? .missing : .allow(appID: nil)
        }
        do {
            let verified = try await engine.verify(token)
            // Replay protection: a limited-use token is good for one request at any gate (its
            // `jti` is consumed, as `verifyAppCheckToken` consumes it); a replay is invalid.
            if verified.isLimitedUse, try await engine.consume(verified: verified) {
                throw AppCheckError(.invalidToken, "The limited-use App Check token was already used.")
            }
            counts.withLock { $0.verified += 1 }
            counters?.verified.increment()
            return .allow(appID: verified.appID)
        } catch {
            counts.withLock { $0.invalid += 1 }
            counters?.invalid.increment()
            if mode == .monitor {
                logger.info("request with an invalid App Check token allowed (monitor)", metadata: ["service": "\(service)", "error": "\(error)"])
            }
            return mode == .enforce ? .invalid : .allow(appID: nil)
        }
    }
}

/// A request refused on App Check: the cause a transport attaches to its own protocol's error.
public struct AppCheckRefused: Error, Sendable, CustomStringConvertible {
    public var outcome: AppCheckGate.Outcome
    public var description: String { outcome == .missing ? "App Check: no token" : "App Check: invalid token" }
}
