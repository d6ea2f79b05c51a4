import HearthCore

/// A streaming `multipart/*` parser: feed body chunks, get part boundaries, headers and data
/// as they arrive. Data is released as soon as it cannot be the start of the next boundary,
/// so a part of any size passes through in bounded memory.
struct MultipartStream {
    enum Event: Equatable {
        /// A part begins: its headers, names lower-cased.
        case part([String: String])
        case data([UInt8])
        /// The closing boundary was read.
        case end
    }

    enum State {
        case preamble
        case headers
        case body
        case done
    }

    let delimiter: [UInt8]  // "\r\n--boundary"
    var state: State = .preamble
    var buffer: [UInt8]
    var parts = 0
    static let maxHeaders = 16 << 10
    static let maxParts = 100

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        buffer = Array("\r\n".utf8)  // so the first boundary matches the same delimiter
    }

    /// The boundary parameter of a `multipart/...` content type.
    static func boundary(_ contentType: String, types: Set<String>) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = parts.first?.lowercased(), types.contains(type) else { return nil }
        for p in parts.dropFirst() {
            let kv = p.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var v = kv[1].trimmingCharacters(in: .whitespaces)
            if v.hasPrefix("\""), v.hasSuffix("\""), v.count >= 2 { v = String(v.dropFirst().dropLast()) }
            return v.isEmpty || v.utf8.count > 200 ? nil : v
        }
        return nil
    }

    static func bad(_ why: String) -> HearthError { .invalidArgument("Malformed multipart body: \(why)") }

    mutating func feed(_ chunk: some Collection<UInt8>) throws(HearthError) -> [Event] {
        buffer.append(contentsOf: chunk)
        var events: [Event] = []
        while true {
            switch state {
            case .preamble:
                guard let i = find(delimiter) else {
                    if buffer.count > Self.maxHeaders { throw Self.bad("no opening boundary") }
                    return events
                }
                buffer.removeFirst(i + delimiter.count)
                state = .headers
            case .headers:
                guard buffer.count >= 2 else { return events }
                if buffer[0] == 45 && buffer[1] == 45 {
                    state = .done
                    events.append(.end)
                    continue
                }
                guard let end = find(Array("\r\n\r\n".utf8)) else {
                    if buffer.count > Self.maxHeaders { throw Self.bad("part headers are too long") }
                    return events
                }
                parts += 1
                if parts > Self.maxParts { throw Self.bad("too many parts") }
                var headers: [String: String] = [:]
                let text = String(decoding: buffer[..<end], as: UTF8.self)
                for line in text.split(separator: "\r\n") {
                    let kv = line.split(separator: ":", maxSplits: 1)
                    if kv.count == 2 {
                        headers[kv[0].trimmingCharacters(in: .whitespaces).lowercased()] = kv[1].trimmingCharacters(in: .whitespaces)
                    }
                }
                buffer.removeFirst(end + 4)
                events.append(.part(headers))
                state = .body
            case .body:
                if let i = find(delimiter) {
                    if i > 0 { events.append(.data(Array(buffer[..<i]))) }
                    buffer.removeFirst(i + delimiter.count)
                    state = .headers
                    continue
                }
                let ready = buffer.count - min(buffer.count, delimiter.count - 1)
                if ready > 0 {
                    events.append(.data(Array(buffer[..<ready])))
                    buffer.removeFirst(ready)
                }
                return events
            case .done:
                buffer.removeAll()
                return events
            }
        }
    }

    /// The body ended: it must have reached its closing boundary.
    func finish() throws(HearthError) {
        guard case .done = state else { throw Self.bad("the body ended before its closing boundary") }
    }

    func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        let first = needle[0]
        var i = 0
        let last = buffer.count - needle.count
        while i <= last {
            if buffer[i] == first {
                var j = 1
                while j < needle.count && buffer[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}
