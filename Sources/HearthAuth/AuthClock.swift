import Foundation

/// Where the auth engine reads the time, in milliseconds since the epoch. Injected so that
/// tests control expiry, rotation and rate limits without sleeping.
public struct AuthClock: Sendable {
    public let millis: @Sendable () -> Int64

    public init(millis: @escaping @Sendable () -> Int64) { self.millis = millis }

    public static let system = AuthClock { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    public var seconds: Int64 { millis() / 1000 }
}
