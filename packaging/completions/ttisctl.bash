# bash completion for ttisctl: asks ttisctl itself (urfave/cli's completion flag).
_ttisctl_complete() {
	local cur words
	cur="${COMP_WORDS[COMP_CWORD]}"
	words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		COMPREPLY=($(compgen -W "$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)" -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$("${words[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
	fi
}
complete -o default -F _ttisctl_complete ttisctl
