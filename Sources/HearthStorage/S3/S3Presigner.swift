public import HearthCore
public import Foundation

/// Presigned S3 requests for a backend to hand out — what boto3's `generate_presigned_url`
/// and `generate_presigned_post` do — for Hearth's S3 endpoint or for AWS S3 itself.
///
/// ```swift
/// let presigner = S3Presigner(endpoint: URL(string: "http://127.0.0.1:9900")!, region: "us-east-1",
///                             accessKeyID: id, secretAccessKey: secret)
/// let put = try presigner.presignedURL(method: "PUT", bucket: "media", key: "users/u1/avatar.png", expires: 900)
/// let form = try presigner.presignedPost(bucket: "media", key: "uploads/${filename}", expires: 900,
///                                        conditions: [.startsWith("$key", "uploads/"), .contentLengthRange(1, 10 << 20)])
/// ```
public struct S3Presigner: Sendable {
    public enum AddressingStyle: Sendable { case path, virtualHosted }

    public var endpoint: URL
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    public var addressing: AddressingStyle
    /// The signing time (tests pin it); nil = now.
    public var now: (@Sendable () -> Int64)?

    public init(endpoint: URL, region: String, accessKeyID: String, secretAccessKey: String, addressing: AddressingStyle = .path,
                now: (@Sendable () -> Int64)? = nil) {
        self.endpoint = endpoint
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.addressing = addressing
        self.now = now
    }

    func time() -> Int64 { now?() ?? Int64(Date().timeIntervalSince1970) }

    /// Host (with a non-default port) and the decoded path for a bucket and key.
    func target(bucket: String, key: String) throws(HearthError) -> (host: String, path: String, base: String) {
        guard let scheme = endpoint.scheme, var host = endpoint.host else { throw .invalidArgument("The endpoint needs a scheme and a host.") }
        if let port = endpoint.port, !((scheme == "https" && port == 443) || (scheme == "http" && port == 80)) { host += ":\(port)" }
        switch addressing {
        case .path: return (host, "/\(bucket)/\(key)", "\(scheme)://\(host)")
        case .virtualHosted: return ("\(bucket).\(host)", "/\(key)", "\(scheme)://\(bucket).\(host)")
        }
    }

    /// A URL anyone can use until it expires to do `method` on the object. `headers` that are
    /// signed must be sent with the request unchanged (e.g. `content-type` for a PUT).
    public func presignedURL(
        method: String, bucket: String, key: String, expires: Int, headers: [String: String] = [:], query extra: [(String, String)] = []
    ) throws(HearthError) -> URL {
        guard (1...604_800).contains(expires) else { throw .invalidArgument("Expiry must be between 1 second and 7 days.") }
        let (host, path, base) = try target(bucket: bucket, key: key)
        let amzDate = SigV4.formatAmzDate(time())
        let scope = SigV4.Scope(date: String(amzDate.prefix(8)), region: region)
        var signed: [String: String] = ["host": host]
        for (k, v) in headers { signed[k.lowercased()] = v }
        let signedNames = signed.keys.sorted()
        var query: [(String, String)] = extra + [
            ("X-Amz-Algorithm", SigV4.algorithm), ("X-Amz-Credential", "\(accessKeyID)/\(scope.text)"), ("X-Amz-Date", amzDate),
            ("X-Amz-Expires", String(expires)), ("X-Amz-SignedHeaders", signedNames.joined(separator: ";")),
        ]
        let canonical = SigV4.canonicalRequest(
            method: method, path: path, query: query, headers: signed, signedHeaders: signedNames, payloadHash: SigV4.unsignedPayload)
        let signature = SigV4.signature(
            secret: secretAccessKey, scope: scope, stringToSign: SigV4.stringToSign(amzDate: amzDate, scope: scope, canonicalRequest: canonical))
        query.append(("X-Amz-Signature", signature))
        let q = query.map { SigV4.uriEncode($0.0) + "=" + SigV4.uriEncode($0.1) }.joined(separator: "&")
        guard let url = URL(string: base + SigV4.uriEncode(path, keepSlash: true) + "?" + q) else {
            throw .invalidArgument("Cannot build a URL for \(bucket)/\(key).")
        }
        return url
    }

    /// A condition of a POST policy.
    public enum Condition: Sendable, Hashable {
        /// `{"field": "value"}`
        case equals(String, String)
        /// `["starts-with", "$field", "prefix"]`
        case startsWith(String, String)
        /// `["content-length-range", min, max]`
        case contentLengthRange(Int64, Int64)

        var json: JSON {
            switch self {
            case .equals(let f, let v): .object([(f, .string(v))])
            case .startsWith(let f, let p): .array([.string("starts-with"), .string(f), .string(p)])
            case .contentLengthRange(let lo, let hi): .array([.string("content-length-range"), .number(String(lo)), .number(String(hi))])
            }
        }
    }

    public struct PresignedPost: Sendable {
        /// Where the form is posted.
        public var url: URL
        /// Form fields to send before the file (`key`, `policy`, `x-amz-*`, and `fields` given).
        public var fields: [String: String]
    }

    /// A browser upload form: post `fields` plus a `file` part to `url` before `expires`
    /// seconds. The key may end in `${filename}`.
    public func presignedPost(
        bucket: String, key: String, expires: Int, fields extra: [String: String] = [:], conditions: [Condition] = []
    ) throws(HearthError) -> PresignedPost {
        let (_, _, base) = try target(bucket: bucket, key: "")
        let now = time()
        let amzDate = SigV4.formatAmzDate(now)
        let scope = SigV4.Scope(date: String(amzDate.prefix(8)), region: region)
        let credential = "\(accessKeyID)/\(scope.text)"
        var all: [Condition] = [.equals("bucket", bucket)]
        if key.hasSuffix("${filename}") {
            all.append(.startsWith("$key", String(key.dropLast("${filename}".count))))
        } else {
            all.append(.equals("key", key))
        }
        all += [.equals("x-amz-algorithm", SigV4.algorithm), .equals("x-amz-credential", credential), .equals("x-amz-date", amzDate)]
        for (k, v) in extra.sorted(by: { $0.key < $1.key }) where !conditions.contains(where: { c in
            if case .equals(let f, _) = c { return f.lowercased() == k.lowercased() }
            if case .startsWith(let f, _) = c { return f.lowercased() == "$" + k.lowercased() }
            return false
        }) {
            all.append(.equals(k, v))
        }
        all += conditions
        let expiration = Timestamp(seconds: now + Int64(expires), nanos: 0).rfc3339
        let policy = JSON.object([("expiration", .string(expiration)), ("conditions", .array(all.map(\.json)))])
        let encoded = Data(policy.serializedBytes()).base64EncodedString()
        let signature = SigV4.hex(SigV4.hmac(SigV4.signingKey(secret: secretAccessKey, scope: scope), encoded))
        var fields = extra
        fields["key"] = key
        fields["x-amz-algorithm"] = SigV4.algorithm
        fields["x-amz-credential"] = credential
        fields["x-amz-date"] = amzDate
        fields["policy"] = encoded
        fields["x-amz-signature"] = signature
        guard let url = URL(string: addressing == .path ? "\(base)/\(bucket)" : base) else { throw .invalidArgument("Cannot build the form URL.") }
        return PresignedPost(url: url, fields: fields)
    }
}
