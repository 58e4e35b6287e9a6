"""Skill candidates from verified work: records, evidence rules, promotion, retirement and
discovery of `.lsp-agent/skills/*/SKILL.md`. Front ends call `service.SkillService`."""
