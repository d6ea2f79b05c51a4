import Crypto
import HearthCore

/// AWS signature version 2 for presigned query strings (`AWSAccessKeyId`, `Expires`,
/// `Signature`): what boto3's `generate_presigned_url` still produces for S3 unless told to
/// use `s3v4`, and what older SDKs hand out. HMAC-SHA1 over
/// `method \n content-md5 \n content-type \n expires \n x-amz-headers resource`.
public enum SigV2 {
    /// Query parameters that are part of the signed resource (sub-resources and response
    /// overrides), as S3 and botocore list them.
    static let signedSubresources: Set<String> = [
        "accelerate", "acl", "analytics", "cors", "defaultObjectAcl", "delete", "inventory", "lifecycle", "location", "logging",
        "metrics", "notification", "object-lock", "partNumber", "policy", "replication", "requestPayment", "response-cache-control",
        "response-content-disposition", "response-content-encoding", "response-content-language", "response-content-type",
        "response-expires", "restore", "select", "select-type", "storageClass", "tagging", "torrent", "uploadId", "uploads",
        "versionId", "versioning", "versions", "website",
    ]

    /// The string to sign. `path` is the request path as sent (percent-encoded, path-style
    /// `/bucket/key`); `query` decoded; `headers` with lowercase names.
    public static func stringToSign(
        method: String, path: String, query: [(String, String)], headers: [String: String], expires: String
    ) -> String {
        let amz = headers.filter { $0.key.hasPrefix("x-amz-") }.sorted { $0.key < $1.key }
            .map { "\($0.key):\($0.value.trimmingCharacters(in: .whitespaces))\n" }.joined()
        var resource = path
        let sub = query.filter { signedSubresources.contains($0.0) }.sorted { $0.0 < $1.0 }
        if !sub.isEmpty {
            resource += "?" + sub.map { $0.1.isEmpty ? $0.0 : "\($0.0)=\($0.1)" }.joined(separator: "&")
        }
        return [method, headers["content-md5"] ?? "", headers["content-type"] ?? "", expires].joined(separator: "\n") + "\n" + amz + resource
    }

    /// base64(HMAC-SHA1(secret, stringToSign)).
    public static func signature(secret: String, stringToSign: String) -> String {
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Array(stringToSign.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return Base64.encode(Array(mac))
    }
}
