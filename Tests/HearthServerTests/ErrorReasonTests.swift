import HearthAuth
import HearthCore
import HearthStorage
import Testing

@testable import HearthServer

/// Typed error reasons: transports render the reason an error carries, never a code parsed back
/// out of its message.
@Suite struct ErrorReasonTests {
    @Test func s3CodesComeFromReasons() {
        let cases: [(HearthError, String, Int)] = [
            (HearthError(.notFound, "The bucket b does not exist.", reason: .noSuchBucket), "NoSuchBucket", 404),
            (HearthError(.failedPrecondition, "The bucket b is not empty.", reason: .bucketNotEmpty), "BucketNotEmpty", 409),
            (HearthError(.failedPrecondition, "At least one of the pre-conditions you specified did not hold (x).", reason: .preconditionFailed),
             "PreconditionFailed", 412),
            (HearthError(.invalidArgument, "Invalid bucket name \"A\".", reason: .invalidBucketName), "InvalidBucketName", 400),
            (HearthError(.invalidArgument, "The list of parts was not in ascending order.", reason: .invalidPartOrder), "InvalidPartOrder", 400),
            (HearthError(.permissionDenied, "The chunk signature …", reason: .signatureDoesNotMatch), "SignatureDoesNotMatch", 403),
            // No reason: the canonical code decides.
            (HearthError(.notFound, "No such object: b/k"), "NoSuchKey", 404),
            (HearthError(.alreadyExists, "The bucket b already exists."), "BucketAlreadyOwnedByYou", 409),
            (HearthError(.invalidArgument, "Bad input."), "InvalidArgument", 400),
        ]
        for (error, code, status) in cases {
            let s3 = S3Error.from(error)
            #expect(s3.code == code && s3.status == status && s3.message == error.message, "\(error)")
        }
        // A message that merely looks like `Code: text` is not read as a code, nor is a bucket-like text.
        #expect(S3Error.from(HearthError(.invalidArgument, "NoSuchUpload: made up")).code == "InvalidArgument")
        #expect(S3Error.from(HearthError(.notFound, "The bucket is a word here.")).code == "NoSuchKey")
        #expect(S3Error.from(HearthError(.failedPrecondition, "The bucket b is not empty.")).code == "PreconditionFailed")
        // Reasons S3 has no code for fall back to the canonical code.
        #expect(S3Error.from(HearthError(.unauthenticated, "x", reason: .invalidGrant)).code == "AccessDenied")
    }

    @Test func authCodesComeFromReasons() {
        let error = AuthErrorCode.emailExists.error()
        #expect(error.reason == AuthErrorCode.emailExists.reason && error.authErrorCode == .emailExists)
        #expect(AuthErrorCode.weakPassword.error().message == "WEAK_PASSWORD : Password should be at least 6 characters")
        // Text alone is not a code.
        #expect(HearthError(.invalidArgument, "EMAIL_EXISTS").authErrorCode == nil)
        let response = AuthRESTResponder.errorResponse(AuthErrorCode.emailExists.error())
        #expect(response.status.code == 400)
        // Without the reason, Firebase's 400 is not inferred from the text: the code's own status.
        #expect(AuthRESTResponder.errorResponse(HearthError(.alreadyExists, "EMAIL_EXISTS")).status.code == 409)
        #expect(AuthRESTResponder.errorResponse(AuthErrorCode.emailExists.error()).status.code == 400)
        #expect(AuthRESTResponder.errorResponse(AuthErrorCode.insufficientPermission.error()).status.code == 403)
    }
}
