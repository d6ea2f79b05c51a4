import HearthCore

/// A streaming parser for `multipart/related` bodies with two parts — JSON metadata, then
/// the object's bytes — as Firebase Storage and google-cloud-storage send uploads. Bytes of
/// the second part are handed out as they arrive (holding back only enough to recognise the
/// closing boundary), so an upload of any size uses bounded memory.
struct MultipartRelated {
    enum Event: Equatable {
        /// The first part's body (metadata), complete.
        case metadata([UInt8])
        /// The second part's `Content-Type`, if it has one.
        case mediaStart(contentType: String?)
        case media([UInt8])
        case end
    }

    enum State {
        case preamble
        case headers(part: Int)
        case body(part: Int)
        case done
    }

    let delimiter: [UInt8]  // "\r\n--boundary"
    var state: State = .preamble
    var buffer: [UInt8] = []
    var metadata: [UInt8] = []
    static let maxMetadata = 1 << 20
    static let maxHeaders = 16 << 10

    /// `boundary` from the `Content-Type` header.
    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        buffer = Array("\r\n".utf8)  // so the first boundary matches the same delimiter
    }

    /// The boundary parameter of a `multipart/related` content type.
    static func boundary(_ contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = parts.first?.lowercased(), type == "multipart/related" || type == "multipart/mixed" || type == "multipart/form-data"
        else { return nil }
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

    /// Feeds the next chunk of the body; returns what became available.
    mutating func feed(_ chunk: some Collection<UInt8>) throws(HearthError) -> [Event] {
        buffer.append(contentsOf: chunk)
        var events: [Event] = []
        while true {
            switch state {
            case .preamble:
                guard let i = find(delimiter, from: 0) else {
                    if buffer.count > Self.maxHeaders { throw Self.bad("no opening boundary") }
                    return events
                }
                buffer.removeFirst(i + delimiter.count)
                state = .headers(part: 1)
            case .headers(let part):
                // After a boundary: "--" ends the body; else "\r\n" then headers up to "\r\n\r\n".
                guard buffer.count >= 2 else { return events }
                if buffer[0] == 45 && buffer[1] == 45 {
                    if part <= 2 { throw Self.bad("the body ended before the object's bytes") }
                    state = .done
                    continue
                }
                guard let end = find(Array("\r\n\r\n".utf8), from: 0) else {
                    if buffer.count > Self.maxHeaders { throw Self.bad("part headers are too long") }
                    return events
                }
                let headerText = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                if part > 2 { throw Self.bad("more than two parts") }
                if part == 2 {
                    var type: String?
                    for line in headerText.split(separator: "\r\n") {
                        let kv = line.split(separator: ":", maxSplits: 1)
                        if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-type" {
                            type = kv[1].trimmingCharacters(in: .whitespaces)
                        }
                    }
                    events.append(.mediaStart(contentType: type))
                }
                state = .body(part: part)
            case .body(let part):
                if let i = find(delimiter, from: 0) {
                    let content = Array(buffer[..<i])
                    buffer.removeFirst(i + delimiter.count)
                    if part == 1 {
                        metadata += content
                        if metadata.count > Self.maxMetadata { throw Self.bad("the metadata part is too large") }
                        events.append(.metadata(metadata))
                    } else if !content.isEmpty {
                        events.append(.media(content))
                    }
                    state = .headers(part: part + 1)
                    continue
                }
                // Keep back what could be the start of the delimiter.
                let keep = min(buffer.count, delimiter.count - 1)
                let ready = buffer.count - keep
                if ready > 0 {
                    let content = Array(buffer[..<ready])
                    buffer.removeFirst(ready)
                    if part == 1 {
                        metadata += content
                        if metadata.count > Self.maxMetadata { throw Self.bad("the metadata part is too large") }
                    } else {
                        events.append(.media(content))
                    }
                }
                return events
            case .done:
                buffer.removeAll()
                if !events.contains(.end) { events.append(.end) }
                return events
            }
        }
    }

    /// The body has ended: it must have been complete.
    func finish() throws(HearthError) {
        guard case .done = state else { throw Self.bad("the body ended before its closing boundary") }
    }

    func find(_ needle: [UInt8], from: Int) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        let first = needle[0]
        var i = from
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
