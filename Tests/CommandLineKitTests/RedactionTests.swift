import CommandLineKit
import Testing

@Suite("Passwords are taken out of printed lines")
struct RedactionTests {
    @Test(
        "URIs keep their user, host and database; passwords become ***",
        arguments: [
            ("postgresql://lab:secret@db/lab", "postgresql://lab:***@db/lab"),
            ("'postgres://u:p%40ss@/d?host=/tmp'", "'postgres://u:***@/d?host=/tmp'"),
            ("a postgresql://lab@db/lab b", "a postgresql://lab@db/lab b"),
            (
                "postgresql:///d?user=u&password=secret&x=1",
                "postgresql:///d?user=u&password=***&x=1"
            ),
            ("host=db PASSWORD = secret dbname=lab", "host=db PASSWORD = *** dbname=lab"),
            ("no secrets: 12:30 at lab.olog", "no secrets: 12:30 at lab.olog"),
        ]
    )
    func redacts(_ text: String, _ expected: String) {
        #expect(Redaction.passwords(in: text) == expected)
    }
}
