import HearthCore

/// Uploads as Firebase Storage and google-cloud-storage send them: `multipart/related` with
/// two parts — JSON metadata, then the object's bytes — over ``MultipartStream``. The bytes
/// are handed out as they arrive.
struct MultipartRelated {
    enum Event: Equatable {
        /// The first part's body (metadata), complete.
        case metadata([UInt8])
        /// The second part's `Content-Type`, if it has one.
        case mediaStart(contentType: String?)
        case media([UInt8])
        case end
    }

    var stream: MultipartStream
    var part = 0
    var metadata: [UInt8] = []
    static let maxMetadata = 1 << 20

    init(boundary: String) { stream = MultipartStream(boundary: boundary) }

    static func boundary(_ contentType: String) -> String? {
        MultipartStream.boundary(contentType, types: ["multipart/related", "multipart/mixed"])
    }

    mutating func feed(_ chunk: some Collection<UInt8>) throws(HearthError) -> [Event] {
        var out: [Event] = []
        for e in try stream.feed(chunk) {
            switch e {
            case .part(let headers):
                if part == 1 { out.append(.metadata(metadata)) }
                part += 1
                if part > 2 { throw MultipartStream.bad("more than two parts") }
                if part == 2 { out.append(.mediaStart(contentType: headers["content-type"])) }
            case .data(let bytes):
                if part == 1 {
                    metadata += bytes
                    if metadata.count > Self.maxMetadata { throw MultipartStream.bad("the metadata part is too large") }
                } else {
                    out.append(.media(bytes))
                }
            case .end:
                if part < 2 { throw MultipartStream.bad("the body ended before the object's bytes") }
                out.append(.end)
            }
        }
        return out
    }

    func finish() throws(HearthError) { try stream.finish() }
}
