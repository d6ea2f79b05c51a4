public import HearthCore
public import HTTPTypes

/// A gRPC status: a canonical code (``ErrorCode`` holds the gRPC codes) and a message, sent
/// in the trailers `grpc-status` and `grpc-message`.
public struct GRPCStatus: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public static let ok = GRPCStatus(.ok, "")

    /// An engine error keeps its code and its Firestore message.
    public init(_ error: HearthError) {
        self.init(error.code, error.message)
    }

    public var description: String { "\(code.statusName): \(message)" }

    public static let statusName = HTTPField.Name("grpc-status")!
    public static let messageName = HTTPField.Name("grpc-message")!

    /// The trailers that end a call with this status.
    public var trailers: HTTPFields {
        var fields = HTTPFields()
        fields[Self.statusName] = String(code.rawValue)
        if !message.isEmpty { fields[Self.messageName] = Self.percentEncode(message) }
        return fields
    }

    /// gRPC's `grpc-message` encoding: bytes outside 0x20–0x7E, and `%`, as `%XX` of the UTF-8 bytes.
    public static func percentEncode(_ message: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(message.utf8.count)
        for b in message.utf8 {
            if b >= 0x20 && b <= 0x7E && b != UInt8(ascii: "%") {
                out.append(b)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The inverse of ``percentEncode(_:)`` (lenient: a malformed escape stays as it is).
    public static func percentDecode(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var i = 0
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let h = nibble(bytes[i + 1]), let l = nibble(bytes[i + 2]) {
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `grpc-timeout` (see `GRPCTimeout`). Nil when malformed.
    public static func parseTimeout(_ text: String) -> Duration? { GRPCTimeout.parse(text) }
}
