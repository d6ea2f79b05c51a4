import Testing
@testable import HearthRules

@Suite("RE2-subset regular expressions")
struct RegexEngineTests {
    func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }

    /// Patterns that make backtracking engines take exponential time run in linear time.
    @Test(arguments: ["(a*)*b", "(a|aa)*b", "(a+a+)+b", "(x?){30}x{30}b", "(.*a){20}b"])
    func linearTime(_ pattern: String) throws {
        let re = try RulesRegex.compile(pattern)
        let input = Array(repeating: UInt32(97), count: 20_000)
        var work = 0
        #expect(re.run(input, from: 0, anchored: true, captures: false, work: &work) == nil)
        // Linear, not exponential: at most one step per (position, instruction).
        #expect(work > 0 && work <= (input.count + 1) * re.program.count)
    }

    @Test(arguments: ["a{1001}", "(a{1000}){1000}", "((((a{100}){100}){100}){100})", "a{2,1}", "(?<!a)b", "(?=a)", "\\1",
                      "[z-a]", "a**", "(?P<n>a)(?P<n>b)", "\\p{Greek}", "x{"])
    func rejected(_ pattern: String) {
        if pattern == "x{" {
            #expect((try? RulesRegex.compile(pattern)) != nil)  // an incomplete repeat is a literal in RE2
            return
        }
        #expect(throws: RulesRegex.SyntaxError.self) { try RulesRegex.compile(pattern) }
    }

    @Test func leftmostFirstLikeRE2() throws {
        // Alternation prefers the first branch that matches; greedy vs lazy repetition.
        let alt = try RulesRegex.compile("a(b|bc)")
        let m = try #require(alt.find(scalars("xabcx"), from: 0))
        #expect(m[0] == 1 && m[1] == 3)
        let lazy = try RulesRegex.compile("<.+?>")
        #expect(lazy.replaceAll("<a><b>", with: "_") == "__")
        let greedy = try RulesRegex.compile("<.+>")
        #expect(greedy.replaceAll("<a><b>", with: "_") == "_")
    }

    @Test func capturesAndReplacement() throws {
        let re = try RulesRegex.compile("(?P<user>\\w+)@(\\w+)\\.com")
        #expect(re.replaceAll("ann@x.com, bob@y.com", with: "$2:${user}") == "x:ann, y:bob")
        #expect(re.replaceAll("ann@x.com", with: "$9") == "")  // no such group: nothing inserted
        let optional = try RulesRegex.compile("a(b)?c")
        #expect(optional.replaceAll("ac", with: "[$1]") == "[]")
    }

    @Test func anchorsAndFlags() throws {
        let multi = try RulesRegex.compile("(?m)^x")
        #expect(multi.replaceAll("x\nx", with: "y") == "y\ny")
        let single = try RulesRegex.compile("^x")
        #expect(single.replaceAll("x\nx", with: "y") == "y\nx")
        let end = try RulesRegex.compile("x$")
        #expect(end.replaceAll("x\nx", with: "y") == "x\ny")
        #expect(try RulesRegex.compile("(?i)é").matchesWhole("É"))
        #expect(try RulesRegex.compile("(?i)[a-c]+").matchesWhole("AbC"))
        #expect(try RulesRegex.compile("(?U)a+").find(scalars("aaa"), from: 0)! == [0, 1])
        #expect(try RulesRegex.compile("\\bcat\\b").replaceAll("cat concat cat", with: "dog") == "dog concat dog")
    }

    @Test func unicodeAndClasses() throws {
        #expect(try RulesRegex.compile("\\pL+").matchesWhole("héllo"))
        #expect(try RulesRegex.compile("\\p{Lu}\\p{Ll}+").matchesWhole("Émile"))
        #expect(try RulesRegex.compile("[^\\d\\s]+").matchesWhole("abc"))
        #expect(try !RulesRegex.compile("[^\\d\\s]+").matchesWhole("a c"))
        #expect(try RulesRegex.compile("[[:^digit:]]+").matchesWhole("abc"))
        #expect(try RulesRegex.compile("\\x{1F600}").matchesWhole("😀"))
        #expect(try RulesRegex.compile("[😀-😂]").matchesWhole("😁"))
        #expect(try RulesRegex.compile("\\Q.*\\E").matchesWhole(".*"))
    }

    @Test func emptyMatchesAdvanceLikeJava() throws {
        #expect(try RulesRegex.compile("").split("abc") == ["", "a", "b", "c"])
        #expect(try RulesRegex.compile("x*").replaceAll("abc", with: "-") == "-a-b-c-")
        #expect(try RulesRegex.compile(",").split("") == [""])
        #expect(try RulesRegex.compile(",").split(",,") == [""])
    }
}
