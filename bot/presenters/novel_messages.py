"""The writers' room's user-facing strings: Simplified Chinese first, English second."""

from __future__ import annotations

from retrieval.i18n import Catalog

# What admins see on top of the plain sentence members get: the setting to fix.
_SETTING_ZH = (
    "（管理员：配置 ANTHROPIC_API_KEY、OPENAI_API_KEY 或 LLM_BASE_URL 后，机器人就能代写。）"
)
_SETTING_EN = (
    " (Admins: configure ANTHROPIC_API_KEY, OPENAI_API_KEY or LLM_BASE_URL and the bot writes.)"
)

T = Catalog(
    {
        # permissions and state
        "admins_only": ("只有管理员可以这样做。", "Only admins can do that."),
        "admins_open": ("只有管理员可以开启新一轮。", "Only admins can open a round."),
        "busy_writing": ("正在写作中，请稍候。", "A chapter is being written; please wait."),
        "busy_writing_pending": (
            "正在写作中，请稍候。本轮胜出的提议已保存，稍后用 /chapter next 写作。",
            "A chapter is being written; the winning goal is saved — use /chapter next later.",
        ),
        "unknown_request": ("不支持的请求。", "Unsupported request."),
        "phase_proposal": ("提议阶段", "proposals"),
        "phase_voting": ("投票阶段", "voting"),
        "phase_writing": ("写作中", "writing"),
        "phase_pending": ("等待写作", "waiting to be written"),
        # rounds
        "round_open": (
            "本小说已有进行中的一轮（{phase}），请先完成它。",
            "This novel already has an open round ({phase}); finish it first.",
        ),
        "round_opened": (
            "第 {n} 章的提议征集开始了，{minutes} 分钟后截止。",
            "Proposals for chapter {n} are open for {minutes} minutes.",
        ),
        "no_model_round": (
            "现在没有可用的语言模型：投票选出的提议由大家自己写，胜出者用 /chapter submit 提交正文（文字或文件）。",
            "No language model is available: the group writes the winning chapter itself — the winner submits it with /chapter submit (text or a file).",
        ),
        "admin_setting": (_SETTING_ZH, _SETTING_EN),
        "how_to_propose": (
            "用 /chapter propose 标题 | 摘要 | 写作要点 提出下一章的目标（每人一个，可修改）。",
            "Propose with /chapter propose title | summary | notes (one per member; you can change it).",
        ),
        "no_round": (
            "当前没有进行中的一轮，先用 /chapter next 开启。",
            "No round is open; start one with /chapter next.",
        ),
        "propose_title_missing": ("提议需要一个标题。", "A proposal needs a title."),
        "propose_too_long": (
            "提议太长：标题最多 100 字，摘要和要点各最多 1000 字。",
            "Proposal too long: title up to 100 characters, summary and notes up to 1000 each.",
        ),
        "proposals_closed": ("提议阶段已经结束。", "Proposals are closed."),
        "proposal_added": ("已收到提议《{title}》。", "Proposal “{title}” received."),
        "proposal_updated": ("已更新你的提议为《{title}》。", "Your proposal is now “{title}”."),
        "proposal_count": (
            "目前共 {n} 个提议，约 {minutes} 分钟后开始投票。",
            "{n} proposal(s) so far; voting starts in about {minutes} minutes.",
        ),
        "round_empty": (
            "本轮没有收到任何提议，已结束，不写新章。用 /chapter next 重新开始。",
            "No proposals this round: it is closed without a chapter. Start again with /chapter next.",
        ),
        "ballot_heading": ("投票开始！", "Voting is open!"),
        "ballot_question": ("下一章写什么？", "What should the next chapter be?"),
        "ballot_help": (
            "点按钮或用 /chapter vote 编号 投票，每人一票，截止前可改票；{minutes} 分钟后截止。",
            "Vote with the buttons or /chapter vote N — one vote each, changeable; closes in {minutes} minutes.",
        ),
        "stale_ballot": (
            "这张选票属于已经结束的一轮，请使用最新的投票。",
            "That ballot belongs to a round that has ended; use the latest one.",
        ),
        "not_voting_yet": (
            "还在提议阶段，投票尚未开始。",
            "Still collecting proposals; voting has not started.",
        ),
        "voting_closed": ("投票已经截止。", "Voting is closed."),
        "bad_option": ("选项编号应在 1–{n} 之间。", "The option number must be between 1 and {n}."),
        "voted": ("已投给 {n}.《{title}》。当前票数：", "Voted for {n}. “{title}”. Current tally:"),
        "vote_same": (
            "你已经投给 {n}.《{title}》。当前票数：",
            "You already voted for {n}. “{title}”. Tally:",
        ),
        "vote_changed": (
            "已改投 {n}.《{title}》。当前票数：",
            "Vote changed to {n}. “{title}”. Tally:",
        ),
        "result_heading": ("投票结果", "Result"),
        "winner": ("胜出：《{title}》（{why}）", "Winner: “{title}” ({why})"),
        "win_votes": ("得票最多", "most votes"),
        "win_tie": ("平票，按最早的提议", "a tie: the earliest proposal wins"),
        "win_no_votes": ("无人投票，按最早的提议", "no votes: the earliest proposal wins"),
        "win_empty": ("没有提议", "no proposals"),
        "pending_abandoned": (
            "已放弃本轮等待写作的提议。",
            "The round's pending goal was abandoned.",
        ),
        # writing
        "writing_progress": ("正在写作第 {n} 章…", "Writing chapter {n}…"),
        "writing_resumed": (
            "上次写作第 {n} 章时程序重启了，现在重新写作…",
            "Writing chapter {n} was interrupted by a restart; writing it again…",
        ),
        "submit_wanted": (
            "没有语言模型，本轮胜出的《{title}》由大家来写：请提议者或管理员用 /chapter submit 提交第 {n} 章正文（文字或上传文件）。胜出的提议已保存。",
            "No language model: the group writes the winner “{title}” — its proposer or an admin submits chapter {n} with /chapter submit (text or a file). The winning goal is saved.",
        ),
        "pending_waiting": (
            "本轮胜出的《{title}》（第 {n} 章）还在等待正文：用 /chapter submit 提交，或管理员用 /chapter close 放弃。",
            "The winner “{title}” (chapter {n}) is waiting for its text: submit it with /chapter submit, or an admin abandons it with /chapter close.",
        ),
        "submit_no_round": (
            "现在没有等待正文的一轮：投票结束、没有模型或写作失败时才可以提交。",
            "No round is waiting for a text: submit after a vote when no model writes, or after a failed write.",
        ),
        "submit_not_yet": (
            "这一轮还没有结束投票，不能提交正文。",
            "This round has not finished voting; a text cannot be submitted yet.",
        ),
        "submit_not_yours": (
            "只有胜出提议的作者（{who}）或管理员可以提交这一章。",
            "Only the winning proposal's author ({who}) or an admin can submit this chapter.",
        ),
        "save_failed": (
            "保存失败，没有保存任何内容。胜出的提议已保留，请稍后再提交。",
            "Saving failed; nothing was saved. The winning goal is kept: submit again later.",
        ),
        "submitted": (
            "已收到第 {n} 章正文并写入情节记忆（{chunks} 段）。",
            "Chapter {n} received and added to plot memory ({chunks} chunks).",
        ),
        "revise_save_failed": (
            "保存失败，第 {n} 章没有改动，当前仍是第 {v} 版。请稍后重试。",
            "Saving failed; chapter {n} is unchanged and version {v} is still current. Try again later.",
        ),
        "revising_progress": ("正在重写第 {n} 章…", "Rewriting chapter {n}…"),
        # a plain sentence; admins get `admin_setting` (the setting names) appended once
        "needs_model": (
            "重写需要语言模型，现在没有可用的模型；上传文本修订仍可使用。",
            "Rewriting needs a language model and none is available; uploading a text still works.",
        ),
        "llm_failed": (
            "写作失败（语言模型：{kind}），没有保存任何内容，请稍后重试。",
            "Writing failed (language model: {kind}); nothing was saved. Try again later.",
        ),
        "llm_failed_pending": (
            "写作失败（语言模型：{kind}），没有保存任何内容。胜出的提议已保留，用 /chapter next 重试。",
            "Writing failed (language model: {kind}); nothing was saved. The winning goal is kept: retry with /chapter next.",
        ),
        "write_failed_pending": (
            "写作或保存失败，没有保存任何内容。胜出的提议已保留，用 /chapter next 重试。",
            "Writing or saving failed; nothing was saved. The winning goal is kept: retry with /chapter next.",
        ),
        "reason_round": ("投票胜出", "won the vote"),
        "reason_submitted": ("成员提交", "submitted by a member"),
        "reason_regenerate": ("重新生成", "regenerated"),
        "reason_upload": ("上传文本", "uploaded text"),
        "indexed": ("已写入情节记忆（{chunks} 段）。", "Added to plot memory ({chunks} chunks)."),
        # chapters
        "chapter_heading": ("第 {n} 章　{title}", "Chapter {n}: {title}"),
        "attached_full": ("全文较长，见附件。", "The full text is attached."),
        "version_note": ("（第 {v} 版）", "(version {v})"),
        "no_chapters": ("还没有任何章节。", "There are no chapters yet."),
        "no_such_chapter": (
            "没有第 {n} 章（目前共 {last} 章）。",
            "There is no chapter {n} (the novel has {last}).",
        ),
        "history_heading": ("第 {n} 章的版本", "Versions of chapter {n}"),
        "history_line": (
            "v{v} · {when} · {who} · {why} · {chars} 字",
            "v{v} · {when} · {who} · {why} · {chars} characters",
        ),
        "current_mark": (" ← 当前", " ← current"),
        "upload_empty": ("上传的文本是空的。", "The uploaded text is empty."),
        "upload_too_long": (
            "上传的文本太长（{got} 字，上限 {limit} 字）。",
            "The uploaded text is too long ({got} characters; the limit is {limit}).",
        ),
        "revised": (
            "已保存为第 {v} 版并设为当前版本，情节记忆已更新（{chunks} 段）。",
            "Saved as version {v} and made current; plot memory updated ({chunks} chunks).",
        ),
        "no_such_version": (
            "第 {n} 章没有第 {v} 版（现有版本：{versions}）。",
            "Chapter {n} has no version {v} (versions: {versions}).",
        ),
        "already_current": (
            "第 {n} 章的第 {v} 版已经是当前版本。",
            "Version {v} of chapter {n} is already current.",
        ),
        "rolled_back": ("第 {n} 章已回滚到第 {v} 版。", "Chapter {n} is back to version {v}."),
        "delete_needs_confirm": (
            "第 {n} 章之后还有 {later} 章；删除它会让后面的章节重新编号。确认请用 /chapter delete {n} confirm",
            "{later} chapter(s) follow chapter {n}; deleting it renumbers them. Confirm with /chapter delete {n} confirm",
        ),
        "deleted": ("已删除第 {n} 章。", "Chapter {n} deleted."),
        "deleted_renumbered": (
            "已删除第 {n} 章，后面的 {count} 章已重新编号。",
            "Chapter {n} deleted; the {count} later chapter(s) were renumbered.",
        ),
        # blueprint and export
        "blueprint_heading": ("世界设定", "World blueprint"),
        "blueprint_saved": (
            "已保存世界设定《{title}》（{chars} 个人物）。",
            "Blueprint “{title}” saved ({chars} characters).",
        ),
        "blueprint_edited": ("已将 {field} 设为：{value}", "Set {field} to: {value}"),
        # consistency check
        "check_heading": (
            "一致性检查：发现 {n} 处可能的问题",
            "Consistency check: {n} possible problem(s)",
        ),
        "check_clean": ("一致性检查：未发现问题。", "Consistency check: no problems found."),
        "rule_dead_acts": (
            "违反：{name}在世界设定中的状态是“{status}”，却在本章行动或说话。",
            "Broken: {name}'s blueprint status is “{status}”, yet they act or speak here.",
        ),
        "fix_dead_acts": (
            "{name}在世界设定中是“{status}”，不能再行动或说话：改写这一句，或写成回忆",
            "{name} is “{status}” in the blueprint and cannot act or speak: rewrite this sentence or make it a memory",
        ),
        "rule_unknown_name": (
            "违反：“{name}”不在世界设定和前文中，却被当作熟人直接使用。",
            "Broken: “{name}” is not in the blueprint or earlier chapters but is used as if known.",
        ),
        "fix_unknown_name": (
            "先交代“{name}”是谁（名字、身份），或改用已有的人物",
            "introduce “{name}” (who they are) first, or use an existing character",
        ),
        "rule_two_places": (
            "违反：同一场景中{name}既在{place}又在{other}。",
            "Broken: in one scene {name} is both at {place} and at {other}.",
        ),
        "fix_two_places": (
            "同一场景里{name}不能同时在{place}和{other}：统一地点，或写出移动的过程",
            "{name} cannot be at {place} and {other} in one scene: pick one place or show the move",
        ),
        "rule_rule_broken": ("违反设定规则：{rule}", "Breaks the blueprint rule: {rule}"),
        "fix_rule_broken": (
            "遵守设定“{rule}”，改写这一句",
            "follow the rule “{rule}” and rewrite this sentence",
        ),
        "rule_model": (
            "违反（模型判断，{kind}）：{rule}",
            "Broken (model's judgement, {kind}): {rule}",
        ),
        "kind_characters": ("人物", "characters"),
        "kind_world_rules": ("世界规则", "world rules"),
        "kind_timeline": ("时间线", "timeline"),
        "kind_facts": ("事实", "facts"),
        # blueprint proposals
        "changes_heading": ("世界设定更新建议", "Proposed blueprint updates"),
        "change_status": (
            "#{id} {name}：状态 {before} → {value}",
            "#{id} {name}: status {before} → {value}",
        ),
        "change_character": ("#{id} 新人物：{name}{desc}", "#{id} new character: {name}{desc}"),
        "change_relationship": (
            "#{id} 关系：{other}是{name}的{value}",
            "#{id} relationship: {other} is {name}'s {value}",
        ),
        "changes_help": (
            "管理员用 /novel blueprint accept 编号（不写编号 = 全部）接受，/novel blueprint reject 编号 拒绝。",
            "Admins: /novel blueprint accept ID (no ID = all) to accept, /novel blueprint reject ID to reject.",
        ),
        "no_pending_changes": (
            "没有待处理的设定更新建议。",
            "There are no pending blueprint updates.",
        ),
        "no_such_change": (
            "没有编号为 {id} 的待处理建议（待处理：{ids}）。",
            "No pending update #{id} (pending: {ids}).",
        ),
        "changes_accepted": ("已接受并写入世界设定：", "Accepted into the blueprint:"),
        "changes_rejected": ("已拒绝：", "Rejected:"),
        "change_skipped": ("未能应用 #{id}：{why}", "Could not apply #{id}: {why}"),
        "blueprint_history_heading": ("世界设定的修改记录", "Blueprint history"),
        "blueprint_history_line": (
            "{when} · {who} · {why} · 《{title}》",
            "{when} · {who} · {why} · “{title}”",
        ),
        "blueprint_history_empty": (
            "世界设定还没有被修改过。",
            "The blueprint has not been changed yet.",
        ),
        "reason_upload_blueprint": ("上传", "upload"),
        "blueprint_decisions_heading": ("设定更新建议的处理记录", "Decided blueprint updates"),
        "blueprint_decision_line": (
            "{when} · {who} · {status} · {change}",
            "{when} · {who} · {status} · {change}",
        ),
        "change_status_accepted": ("已接受", "accepted"),
        "change_status_rejected": ("已拒绝", "rejected"),
        "pending_heading": ("待处理的更新建议", "Pending updates"),
        # ballot settings
        "bad_ballot_style": (
            "投票方式只能是 poll（原生投票）或 keyboard（按钮），收到“{got}”。",
            "The ballot style is poll (native poll) or keyboard (buttons), not “{got}”.",
        ),
        "bad_voters": (
            "投票人显示只能是 shown 或 hidden，收到“{got}”。",
            "Voters are shown or hidden, not “{got}”.",
        ),
        "ballot_settings": (
            "本群的投票方式：{style}；投票人：{voters}。",
            "This chat's ballot: {style}; voters: {voters}.",
        ),
        "style_poll": ("原生投票", "native poll"),
        "style_keyboard": ("按钮", "buttons"),
        "voters_shown": ("显示姓名", "names shown"),
        "voters_hidden": ("不显示姓名", "names hidden"),
        "ballot_closed_heading": ("投票已截止", "Voting closed"),
        "ballot_poll_help": (
            "在下方的投票中选择，或用 /chapter vote 编号；每人一票，截止前可改票，票数以本条消息为准；{minutes} 分钟后截止。",
            "Choose in the poll below or with /chapter vote N — one vote each, changeable; this message shows the count; closes in {minutes} minutes.",
        ),
        "ballot_total": ("共 {n} 票。", "{n} vote(s) in all."),
        "vote_retracted": ("已撤回你的投票。", "Your vote was withdrawn."),
        "vote_not_retracted": (
            "你在投票中撤回了选择，但你用按钮或命令投的票仍然有效。",
            "You withdrew your poll answer; your vote by button or command still counts.",
        ),
        "ballot_recorded": ("", ""),
        "bad_format": (
            "不支持的导出格式“{fmt}”，可选 md 或 epub。",
            "Unknown format “{fmt}”: use md or epub.",
        ),
        "exported": (
            "《{title}》共 {n} 章，{chars} 字，见附件。",
            "“{title}”: {n} chapter(s), {chars} characters, attached.",
        ),
    }
)
