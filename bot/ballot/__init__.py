"""The ballot's room: everything a ballot is, on the chat side.

- `codec`: how a vote is spelled on each form of a ballot and read back (a button's custom_id
  and a keyboard key's callback data: `VoteButton`; a native poll's answer: `PollVote`);
- `store`: where each round's ballot was posted (`PostedBallot`, the one type of it) and each
  chat's ballot settings (SQLite, `bot_ballots`, `bot_ballot_settings`);
- `board`: how a chat's ballot looks (the per-chat style, the native-poll rule), the ballot
  message itself, and its running count kept current by the throttled `editor`;
- `room`: what members do with a ballot (vote by button or key, answer a native poll, change
  `/settings ballot`), each turned into a plain `novel.api.Vote` for the writers' room.

Every path runs downward: `bot/` calls `novel/`, and `novel/` reaches `bot/` only through its
announce port (`novel.announce.Announce`, implemented by `bot.presenters.novel.NovelAnnouncer`).

A vote by button (Discord) or keyboard key (Telegram):

    click ─▶ transport ─Invocation(Press "vote:<round>:<n>")─▶ Router ─▶ registry action "vote"
      ─▶ VoteButton.parse ─▶ BallotRoom.vote ─Vote(round, n, voter)─▶ novel RoundService.vote
           │                                                          (the tally, in SQLite)
           ◀──────── VoteCast, worded by the presenter ◀─────────────┤
      Announce.tally_changed(round) ─▶ NovelAnnouncer ─▶ BallotBoard.touch ─▶ editor (throttled)
      ─▶ BallotViews.view(round) ─▶ BallotBoard.reply ─▶ Router.edit ─▶ transport.edit

A native poll's answer (Telegram):

    answer ─▶ transport ─Invocation(PollAnswer(poll id, indexes))─▶ Router ─▶ poll handler
      ─▶ BallotRoom.poll_answer: PollVote; poll id ─▶ PostedBallot (round, chat)
      ─▶ novel RoundService.vote / withdraw ─▶ …as above

`/chapter submit` (and every other writers' room command):

    line ─▶ transport ─Invocation(Line)─▶ Router checks ─▶ Command[SubmitChapter].run
      ─▶ handler ─▶ novel NovelService.submit ─▶ ChapterSaved ─▶ presenter ─▶ Reply
      ─▶ Router posts it (transport.post ─▶ Posted) ─▶ the registry's posted hooks

A ballot posted (a command's reply, or a deadline's announcement through `Router.send`):

    Reply with a Poll ─▶ transport.post ─▶ Posted ─▶ Router's posted hooks
      ─▶ BallotBoard.posted ─▶ PostedBallot saved ─▶ editor shows any votes cast meanwhile
"""
