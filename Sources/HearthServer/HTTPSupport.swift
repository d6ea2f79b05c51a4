import HearthCore
import Hummingbird
import NIOCore

/// Small HTTP helpers shared by Hearth's REST transports.
enum HTTPSupport {
    static func json(_ body: JSON, status: HTTPResponse.Status = .ok) -> Response {
        var buffer = ByteBufferAllocator().buffer(capacity: 256)
        buffer.writeBytes(body.serializedBytes())
        return Response(
            status: status, headers: [.contentType: "application/json; charset=UTF-8"], body: ResponseBody(byteBuffer: buffer))
    }

    /// Google's REST error body: `{"error":{"code":400,"message":"…","status":"INVALID_ARGUMENT"}}`.
    static func googleError(_ e: HearthError) -> Response {
        json(
            .object([("error", .object([("code", .number(e.code.httpStatus)), ("message", .string(e.message)), ("status", .string(e.code.statusName))]))]),
            status: HTTPResponse.Status(code: e.code.httpStatus))
    }

    /// Decodes `%XX` escapes (and `+` as space in query strings).
    static func percentDecode<S: StringProtocol>(_ s: S, plusIsSpace: Bool = false) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let b = it.next() {
            if b == UInt8(ascii: "%") {
                guard let h = it.next(), let l = it.next(), let hv = hex(h), let lv = hex(l) else { return nil }
                bytes.append(hv << 4 | lv)
            } else if plusIsSpace && b == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else {
                bytes.append(b)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 65...70: c - 55
        case 97...102: c - 87
        default: nil
        }
    }

    /// Query parameters in order, repeated keys kept.
    static func queryParameters(_ query: String?) throws(HearthError) -> [(String, String)] {
        guard let query, !query.isEmpty else { return [] }
        var out: [(String, String)] = []
        for part in query.split(separator: "&") where !part.isEmpty {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = percentDecode(kv[0], plusIsSpace: true), let v = percentDecode(kv.count > 1 ? kv[1] : "", plusIsSpace: true) else {
                throw .invalidArgument("Invalid percent-encoding in the query string.")
            }
            out.append((k, v))
        }
        return out
    }
}
