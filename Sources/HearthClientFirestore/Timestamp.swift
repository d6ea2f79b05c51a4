public import Foundation

/// A point in time with nanosecond precision, as Firestore stores it (`Timestamp` in the Apple SDK).
/// Under coders other than Firestore's it encodes as `{seconds, nanoseconds}`.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let seconds: Int64
    public let nanoseconds: Int32

    public init(seconds: Int64, nanoseconds: Int32) {
        precondition((0..<1_000_000_000).contains(nanoseconds), "Timestamp nanoseconds out of range: \(nanoseconds)")
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    public init(date: Date) {
        let interval = date.timeIntervalSince1970
        var seconds = interval.rounded(.down)
        var nanos = ((interval - seconds) * 1e9).rounded()
        if nanos >= 1e9 { seconds += 1; nanos -= 1e9 }
        self.init(seconds: Int64(seconds), nanoseconds: Int32(nanos))
    }

    public init() { self.init(date: Date()) }

    public func dateValue() -> Date {
        Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    public var description: String { "<Timestamp: seconds=\(seconds) nanoseconds=\(nanoseconds)>" }
}

/// A latitude/longitude pair (`GeoPoint`). Under other coders: `{latitude, longitude}`.
public struct GeoPoint: Sendable, Hashable, Codable {
    public let latitude: Double
    public let longitude: Double

    public init(latitude: Double, longitude: Double) {
        precondition((-90...90).contains(latitude), "Latitude must be in the range of [-90, 90]")
        precondition((-180...180).contains(longitude), "Longitude must be in the range of [-180, 180]")
        self.latitude = latitude
        self.longitude = longitude
    }
}
