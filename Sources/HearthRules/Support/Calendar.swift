import HearthCore

/// The rules language's calendar arithmetic is HearthCore's (one copy of the algorithms).
typealias Calendar = CivilCalendar
