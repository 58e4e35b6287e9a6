"""Skill candidates from verified work (SPEC 7): records, evidence rules, promotion, retirement and
discovery of `.lsp-agent/skills/*/SKILL.md`. Front ends call `service.SkillService`."""
