import Testing
import HearthCore
@testable import HearthAuth

/// bcrypt against known answers (the jBCrypt/OpenBSD vectors, cross-checked with pyca/bcrypt).
@Suite struct BCryptTests {
    @Test(arguments: [
        ("", "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s."),
        ("abc", "$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i"),
        ("abcdefghijklmnopqrstuvwxyz", "$2b$05$.rCVZVOThsIa97pEDOxvGukVKoKHkUySeFEFEpwnxQr6Q3mMrdl92"),
        ("~!@#$%^&*()      ~!@#$%^&*()PNBFRD", "$2y$04$EGdrhbKUv8Oc9vGiXX0HQOf/HJFUESLDN9u2LE7gVvFTKV2.i5JLq"),
    ])
    func knownAnswers(password: String, hash: String) throws {
        #expect(BCrypt.verify(password, hash: hash))
        #expect(!BCrypt.verify(password + "x", hash: hash))
        let parsed = try #require(BCrypt.parse(hash))
        #expect(try BCrypt.hash(password, salt: parsed.salt, cost: parsed.cost, prefix: parsed.prefix) == hash)
    }

    @Test(arguments: ["", "$2a$06$short", "$3a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.",
                      "$2a$03$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.", "$2a$06$DCq7YPn5Rq63x1Lad4cll!TV4S6ytwfsfvkgY8jIucDrjc8deX1s."])
    func malformedHashesAreRejected(_ text: String) {
        #expect(!BCrypt.isWellFormed(text))
        #expect(!BCrypt.verify("", hash: text))
    }

    @Test func importedBcryptIsUpgradedOnSignIn() async throws {
        let h = try Harness(.sqliteQueue)
        let hash = PasswordHash.bcrypt("$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i")
        #expect(PasswordHash(encoded: hash.encoded) == hash)
        let errors = try await h.engine.importAccounts([NewAccount(uid: "b1", email: "b@example.com", passwordHash: hash)])
        #expect(errors.isEmpty)
        await expectAuthError(.invalidPassword) { try await h.engine.signInWithPassword(email: "b@example.com", password: "abd") }
        _ = try await h.engine.signInWithPassword(email: "b@example.com", password: "abc")
        let stored = try await h.engine.account(uid: "b1")
        #expect(stored?.passwordHash?.isNative(.testing) == true)
        _ = try await h.engine.signInWithPassword(email: "b@example.com", password: "abc")
    }
}
