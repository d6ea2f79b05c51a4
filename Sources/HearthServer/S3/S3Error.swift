import HearthCore
import HearthStorage
import Hummingbird
import NIOCore
import HTTPTypes

extension HearthError.Reason {
    /// SigV4 (headers, presigned URLs, aws-chunked trailers): the signature does not match.
    static let signatureDoesNotMatch = Self("SignatureDoesNotMatch")
}

/// An S3 error: its code (`NoSuchKey`), message and HTTP status, rendered as S3's XML.
struct S3Error: Error {
    var code: String
    var message: String
    var status: Int
    var resource: String?

    init(_ code: String, _ message: String, status: Int, resource: String? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.resource = resource
    }

    static let statuses: [String: Int] = [
        "AccessDenied": 403, "SignatureDoesNotMatch": 403, "InvalidAccessKeyId": 403, "RequestTimeTooSkewed": 403,
        "NoSuchKey": 404, "NoSuchBucket": 404, "NoSuchUpload": 404, "BucketAlreadyOwnedByYou": 409, "BucketNotEmpty": 409,
        "EntityTooLarge": 400, "EntityTooSmall": 400, "InvalidRange": 416, "PreconditionFailed": 412, "XAmzContentSHA256Mismatch": 400,
        "BadDigest": 400, "IncompleteBody": 400, "InvalidPart": 400, "InvalidPartOrder": 400, "MalformedXML": 400,
        "InvalidArgument": 400, "InvalidBucketName": 400, "MethodNotAllowed": 405, "NotImplemented": 501, "InvalidRequest": 400,
        "AuthorizationQueryParametersError": 400, "MissingContentLength": 411, "KeyTooLongError": 400, "InvalidDigest": 400,
        "MaxMessageLengthExceeded": 400, "InternalError": 500, "ServiceUnavailable": 503,
    ]

    static func named(_ code: String, _ message: String, resource: String? = nil) -> S3Error {
        S3Error(code, message, status: statuses[code] ?? 400, resource: resource)
    }

    /// A Hearth error in S3's terms: its typed reason when S3 has a code of that name (the
    /// storage engine names its reasons as S3 does), otherwise the canonical code's S3 code.
    static func from(_ e: HearthError, notFound: String = "NoSuchKey", resource: String? = nil) -> S3Error {
        if let reason = e.reason, statuses[reason.rawValue] != nil { return named(reason.rawValue, e.message, resource: resource) }
        switch e.code {
        case .notFound: return named(notFound, e.message, resource: resource)
        case .alreadyExists: return named("BucketAlreadyOwnedByYou", e.message, resource: resource)
        case .permissionDenied, .unauthenticated: return named("AccessDenied", e.message, resource: resource)
        case .failedPrecondition: return named("PreconditionFailed", e.message, resource: resource)
        case .resourceExhausted: return S3Error("InternalError", e.message, status: 507, resource: resource)
        // The store cannot be reached (a PostgreSQL database that is down): AWS's 503, which SDKs retry.
        case .unavailable: return named("ServiceUnavailable", "Service is unable to handle request.", resource: resource)
        case .invalidArgument, .outOfRange: return named("InvalidArgument", e.message, resource: resource)
        default: return named("InternalError", "We encountered an internal error. Please try again.", resource: resource)
        }
    }

    func response(requestID: String, head: Bool) -> Response {
        var headers: HTTPFields = [.contentType: "application/xml", HTTPField.Name("x-amz-request-id")!: requestID]
        if head {
            headers[.contentLength] = "0"
            return Response(status: .init(code: status), headers: headers)
        }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>\(S3XML.escape(code))</Code><Message>\(S3XML.escape(message))</Message>"
        if let resource { xml += "<Resource>\(S3XML.escape(resource))</Resource>" }
        xml += "<RequestId>\(requestID)</RequestId></Error>"
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: xml)))
    }
}

/// Just enough XML for S3: escaping, and reading the flat request documents
/// (CompleteMultipartUpload, Delete) as lists of element texts.
enum S3XML {
    /// Text for element content, always well-formed XML 1.0: markup characters become
    /// entities, a carriage return `&#13;` (a raw one would be read back as a line feed),
    /// and a character XML 1.0 cannot carry at all — C0 controls other than tab, line feed
    /// and carriage return, U+FFFE and U+FFFF, which are forbidden even as character
    /// references — becomes U+FFFD. Such characters reach a body only as echoes of the
    /// request (a key in an error's `Resource`) or in keys listed without `encoding-type=url`,
    /// which is how clients list them exactly (as on AWS).
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\r": out += "&#13;"
            default:
                if isAllowed(c) { out.unicodeScalars.append(c) } else { out.unicodeScalars.append("\u{FFFD}") }
            }
        }
        return out
    }

    /// XML 1.0's `Char` production: `#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`
    /// (Unicode scalars exclude the surrogates).
    static func isAllowed(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x9, 0xA, 0xD: true
        case 0..<0x20, 0xFFFE, 0xFFFF: false
        default: true
        }
    }

    static func unescape(_ s: Substring) -> String? {
        guard s.contains("&") else { return String(s) }
        var out = ""
        var i = s.startIndex
        while i < s.endIndex {
            if s[i] == "&" {
                guard let semi = s[i...].firstIndex(of: ";") else { return nil }
                let entity = s[s.index(after: i)..<semi]
                switch entity {
                case "amp": out += "&"
                case "lt": out += "<"
                case "gt": out += ">"
                case "quot": out += "\""
                case "apos": out += "'"
                default:
                    let hex = entity.hasPrefix("#x")
                    guard entity.hasPrefix("#"), let v = UInt32(entity.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                          let scalar = UnicodeScalar(v), isAllowed(scalar)
                    else { return nil }
                    out.unicodeScalars.append(scalar)
                }
                i = s.index(after: semi)
            } else {
                out.append(s[i])
                i = s.index(after: i)
            }
        }
        return out
    }

    /// For each `<container>` element, the texts of its direct children (`[["PartNumber": "1", "ETag": "…"], …]`).
    static func records(_ xml: String, container: String) throws(S3Error) -> [[String: String]] {
        var records: [[String: String]] = []
        var rest = Substring(xml)
        let open = "<\(container)>", close = "</\(container)>"
        while let start = rest.range(of: open) {
            guard let end = rest[start.upperBound...].range(of: close) else { throw S3Error.named("MalformedXML", "The XML you provided was not well-formed.") }
            var body = rest[start.upperBound..<end.lowerBound]
            var record: [String: String] = [:]
            while let lt = body.firstIndex(of: "<") {
                guard let gt = body[lt...].firstIndex(of: ">") else { throw S3Error.named("MalformedXML", "The XML you provided was not well-formed.") }
                let name = body[body.index(after: lt)..<gt]
                if name.hasPrefix("/") || name.hasSuffix("/") {
                    body = body[body.index(after: gt)...]
                    continue
                }
                guard let endTag = body[gt...].range(of: "</\(name)>"),
                      let text = unescape(body[body.index(after: gt)..<endTag.lowerBound])
                else { throw S3Error.named("MalformedXML", "The XML you provided was not well-formed.") }
                record[String(name)] = text
                body = body[endTag.upperBound...]
            }
            records.append(record)
            rest = rest[end.upperBound...]
        }
        return records
    }
}
