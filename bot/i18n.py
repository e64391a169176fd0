"""Router and transport strings (zh default, en)."""

from retrieval.i18n import Catalog

T = Catalog(
    {
        "unknown_command": (
            "未知命令：/{name}。输入 /help 查看全部命令。",
            "Unknown command: /{name}. Type /help for all commands.",
        ),
        "not_a_command": (
            "请以 / 开头输入命令，例如 /ask 神圣分赐是什么？ 输入 /help 查看全部命令。",
            "Commands start with /, e.g. /ask What is the divine dispensing? Type /help for all.",
        ),
        "usage": ("用法：{usage}", "Usage: {usage}"),
        "missing_arg": ("缺少参数「{param}」。", "Missing argument “{param}”."),
        "too_long": (
            "「{param}」太长了（{n} 字），上限 {limit} 字。",
            "“{param}” is too long ({n} characters; the limit is {limit}).",
        ),
        "empty_arg": ("「{param}」不能为空。", "“{param}” must not be empty."),
        "not_int": (
            "「{param}」应为正整数，收到：{value}",
            "“{param}” must be a positive whole number, got: {value}",
        ),
        "unknown_sub": (
            "/{name} 没有子命令「{sub}」。可用：{choices}",
            "/{name} has no subcommand “{sub}”. Available: {choices}",
        ),
        "need_sub": ("/{name} 需要子命令：{choices}", "/{name} needs a subcommand: {choices}"),
        "bad_choice": (
            "「{param}」应为以下之一：{choices}",
            "“{param}” must be one of: {choices}",
        ),
        "need_file": (
            "请随命令附上一个 JSON 文件。",
            "Please attach a JSON file to the command.",
        ),
        "need_upload": (
            "请把命令写在文件的说明（caption）里，随文件一起发送；支持 {formats}。",
            "Send the command as the file's caption, with the file attached; {formats} work.",
        ),
        "bad_file_type": (
            "不支持这种文件；支持 {formats}。",
            "That kind of file is not supported; {formats} work.",
        ),
        "rate_limited": (
            "请求太频繁了，请 {seconds} 秒后再试。",
            "Too many requests; please try again in {seconds} s.",
        ),
        "internal_error": (
            "抱歉，处理命令时出错了（错误编号 {ref}）。请稍后再试。",
            "Sorry, something went wrong (error ref {ref}). Please try again later.",
        ),
        "unknown_action": (
            "这个按钮已失效。",
            "This button has expired.",
        ),
        "admins_only": ("只有管理员可以这样做。", "Only admins can do that."),
        "admin_unknown": (
            "暂时无法确认管理员身份，请稍后再试。",
            "Could not confirm admin status right now; please try again later.",
        ),
        "file_too_large": (
            "文件太大了（{size} KB），上限 {limit} KB。",
            "The file is too large ({size} KB; the limit is {limit} KB).",
        ),
        "file_failed": (
            "无法下载附件，请稍后再试。",
            "Could not download the attachment; please try again later.",
        ),
        "welcome": (
            "你好！我是百宝箱：用 /ask 向职事语料提问（回答附出处），用 /cite 查经文，"
            "用 /chapter 和大家一起写小说。",
            "Hello! I am Baibao: /ask questions of the ministry corpus (answers cite their "
            "sources), /cite looks up a verse, and /chapter writes a novel together.",
        ),
        "help_header": ("百宝箱 · 可用命令", "Baibao · commands"),
        "help_footer": (
            "在 Discord 中使用斜杠命令；在 Telegram 和控制台中直接输入，例如 /ask 什么是经纶？",
            "Use slash commands on Discord; on Telegram and the console just type, e.g. "
            "/ask What is God's economy?",
        ),
        "working": ("正在思考…", "Thinking…"),
    }
)
