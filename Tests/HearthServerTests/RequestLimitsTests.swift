import Testing

@testable import HearthServer

@Suite struct RequestLimitsTests {
    @Test func eachServiceHasItsDefaultUntilOneLimitIsSet() {
        var limits = RequestLimits()
        #expect(limits.requestBytes(.firestore) == 11 << 20)
        #expect(limits.requestBytes(.auth) == 4 << 20)
        #expect(limits.requestBytes(.database) == 256 << 20)
        #expect(limits.objectBytes == 5 << 30)
        for service in RequestLimits.Service.allCases { #expect(RequestLimits.defaultRequestBytes[service] != nil) }
        limits.requestBytes = 4096
        for service in RequestLimits.Service.allCases { #expect(limits.requestBytes(service) == 4096) }
    }

    @Test func anObjectMayReachTheLimitButNotPassIt() throws {
        try RequestTooLarge.checkObject(size: 90, adding: 10, limit: 100)
        #expect(throws: RequestTooLarge.self) { try RequestTooLarge.checkObject(size: 90, adding: 11, limit: 100) }
        try RequestTooLarge.checkDeclaredObject(nil, limit: 100)
        try RequestTooLarge.checkDeclaredObject(100, limit: 100)
        let error = #expect(throws: RequestTooLarge.self) { try RequestTooLarge.checkDeclaredObject(101, limit: 100) }
        #expect(error?.subject == .object)
        #expect(error?.declared == 101)
    }
}
