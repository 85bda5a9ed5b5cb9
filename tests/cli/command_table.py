"""The extension's commands, arguments and help as azure-cli-core loads them, dumped as JSON (for the linter rules).

Run as `python -m tests.cli.command_table` with AZURE_CONFIG_DIR and AZURE_EXTENSION_DEV_SOURCES set: az reads its
config (and so its extension sources) when azure.cli.core is first imported, once per process, so the loading runs
in its own process rather than inside pytest. It builds the invoker the way `azdev linter` does
(azure.cli.core.file_util), but loads only the `batchai sweep` commands; help is azure-cli-core's own help file
objects, i.e. the YAML of _help.py merged with each argument's `help=`.

Output: {"commands": {name: {"summary", "examples", "supports_no_wait", "arguments": {dest: {"options", "help",
"hidden"}}}}, "groups": {name: {"summary"}}}.
"""
import json
import sys

PREFIX = 'batchai sweep'


def _options(argument):
    from knack.deprecation import Deprecated
    # Deprecated options are the way old names are phased out; the linter ignores them too.
    return [str(option) for option in argument.type.settings.get('options_list') or ()
            if not isinstance(option, Deprecated)]


def load():
    from azure.cli.core import get_default_cli
    from azure.cli.core._help import CliCommandHelpFile, CliGroupHelpFile
    from azure.cli.core.commands import register_cache_arguments
    from azure.cli.core.commands.arm import register_global_subscription_argument, register_ids_argument

    cli = get_default_cli()
    register_global_subscription_argument(cli)
    register_ids_argument(cli)
    register_cache_arguments(cli)
    invoker = cli.invocation_cls(cli_ctx=cli, commands_loader_cls=cli.commands_loader_cls, parser_cls=cli.parser_cls,
                                 help_cls=cli.help_cls)
    cli.invocation = invoker
    loader = invoker.commands_loader
    loader.skip_applicability = True
    loader.load_command_table(PREFIX.split())
    names = sorted(name for name in loader.command_table if name == PREFIX or name.startswith(PREFIX + ' '))
    for name in names:
        # Argument contexts apply to the command being invoked: pretend each one is.
        invoker.data['command_string'] = name
        loader.command_name = name
        loader.load_arguments(name)
    for name in [n for n in loader.command_table if n not in names]:
        del loader.command_table[name]
    invoker.parser.cli_ctx = cli
    invoker.parser.load_command_table(loader)

    help_ctx = cli.help_cls(cli)
    commands, groups = {}, {}
    for name in names:
        words = name.split()
        parser = invoker.parser.subparsers[tuple(words[:-1])].choices[words[-1]]
        help_ctx.update_loaders_with_help_file_contents(words)
        help_file = CliCommandHelpFile(help_ctx, name, parser)
        help_file.load(parser)
        by_option = {}
        for param in help_file.parameters:
            for option in param.name.split():
                by_option[option] = param
        command = loader.command_table[name]
        arguments = {}
        for dest, argument in command.arguments.items():
            options = _options(argument)
            param = next((by_option[o] for o in options if o in by_option), None)
            text = (param.short_summary or param.long_summary) if param else argument.type.settings.get('help')
            arguments[dest] = {'options': options, 'help': text or '',
                               'hidden': argument.type.settings.get('help') == '==SUPPRESS=='}
        commands[name] = {'summary': help_file.short_summary or '',
                          'examples': [{'name': ex.short_summary, 'text': ex.command} for ex in help_file.examples],
                          'supports_no_wait': bool(command.supports_no_wait), 'arguments': arguments}
    for group in sorted({' '.join(n.split()[:i]) for n in names for i in range(2, len(n.split()))}):
        parser = invoker.parser.subparsers[tuple(group.split())]
        help_ctx.update_loaders_with_help_file_contents(group.split())
        help_file = CliGroupHelpFile(help_ctx, group, parser)
        help_file.load(parser)
        groups[group] = {'summary': help_file.short_summary or ''}
    return {'commands': commands, 'groups': groups}


if __name__ == '__main__':
    json.dump(load(), sys.stdout)
